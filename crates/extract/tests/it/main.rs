mod parse;
mod prompts;
mod rules;
