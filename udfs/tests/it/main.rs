mod boxes;
mod slt;
