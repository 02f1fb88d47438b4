mod kill;
mod layering;
mod tables;
