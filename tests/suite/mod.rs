mod cli;
mod kernels;
mod kernels_control;
mod support;
