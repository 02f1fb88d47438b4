mod kill;
mod tables;
