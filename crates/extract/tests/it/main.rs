mod parse;
mod prompts;
mod real_style;
mod rules;
