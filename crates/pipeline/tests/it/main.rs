mod common;
mod evaluate;
mod extract;
mod graph;
mod judge;
mod llm_server;
mod localize;
mod qa;
