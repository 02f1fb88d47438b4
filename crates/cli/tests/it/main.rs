mod commands;
mod interop;
mod release;
