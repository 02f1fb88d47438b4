mod boxes;
mod generate;
mod lake;
mod shapes;
mod slt;
