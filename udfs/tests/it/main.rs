mod boxes;
mod lake;
mod shapes;
mod slt;
