mod cli;
mod headless;
mod kernels;
mod kernels_control;
mod model_server;
mod support;
mod tui_e2e;
mod tui_states;
