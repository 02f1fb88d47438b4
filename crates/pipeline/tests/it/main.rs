mod extract;
mod llm_server;
mod localize;
