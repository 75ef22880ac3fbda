mod openai;
mod scripted;
