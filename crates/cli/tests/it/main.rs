mod commands;
mod interop;
