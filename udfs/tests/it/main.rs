mod boxes;
mod lake;
mod slt;
