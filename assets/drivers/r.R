# oi-tui kernel driver for R.
#
# Reads one command a line from the control FIFO named by the first argument:
# "BLOCK NONCE PATH". Evaluates the code in PATH in the global environment, printing visible
# values as the R console does, then writes the end marker
# ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL to the terminal. Code never passes through stdin.
local({
  args <- commandArgs(trailingOnly = TRUE)
  fifo <- args[[1]]
  control <- file(fifo, open = "r", blocking = TRUE)
  marker_con <- tryCatch(file("/dev/tty", open = "w"), error = function(e) stdout())

  # quit() and q() end the block with their status instead of the kernel. They live in an
  # attached environment, so that ls() does not show them.
  oi <- new.env()
  oi$quit <- function(save = "default", status = 0, runLast = TRUE) {
    stop(structure(class = c("oi_exit", "condition"),
                   list(message = "quit", call = NULL, status = as.integer(status))))
  }
  oi$q <- oi$quit
  attach(oi, name = "oi-tui", warn.conflicts = FALSE)

  # Plots drawn without a file device of the block's own go to PNG files in the directory
  # oi-tui gathers images from (one file a page), closed when the block ends, as a notebook
  # shows them; a device the block opened itself (png("out.png"), pdf()) is left alone.
  figures <- Sys.getenv("OI_TUI_IMAGES")
  Sys.unsetenv("OI_TUI_IMAGES")
  figure_devices <- integer()
  figure_count <- 0L
  if (nzchar(figures) && isTRUE(capabilities("png"))) {
    options(device = function(...) {
      figure_count <<- figure_count + 1L
      grDevices::png(filename = file.path(figures, sprintf("r%04d-%%03d.png", figure_count)))
      figure_devices <<- c(figure_devices, grDevices::dev.cur())
      invisible(NULL)
    })
  }
  close_figures <- function() {
    for (d in intersect(figure_devices, grDevices::dev.list())) {
      tryCatch(grDevices::dev.off(d), error = function(e) NULL)
    }
    figure_devices <<- integer()
  }

  # Prints an error and the calls that led to it, without this driver's own frames.
  report_error <- function(e, calls) {
    call <- conditionCall(e)
    if (is.null(call)) {
      cat("Error: ", conditionMessage(e), "\n", sep = "", file = stderr())
    } else {
      cat("Error in ", paste(deparse(call), collapse = "\n"), ": ",
          conditionMessage(e), "\n", sep = "", file = stderr())
    }
    texts <- vapply(calls, function(c) paste(deparse(c, nlines = 1L), collapse = ""), "")
    start <- max(c(0L, which(startsWith(texts, "eval(expr, envir = globalenv())"))))
    texts <- texts[seq_along(texts) > start]
    texts <- texts[!startsWith(texts, ".handleSimpleError") & !startsWith(texts, "h(") &
                   !startsWith(texts, "stop(")]
    if (length(texts) > 0L) {
      cat("Traceback (innermost last):\n", file = stderr())
      cat(sprintf("%d: %s\n", seq_along(texts), texts), sep = "", file = stderr())
    }
  }

  run_block <- function(block, path) {
    exprs <- tryCatch(parse(file = path, keep.source = TRUE),
                      error = function(e) {
                        cat("Error: ", conditionMessage(e), "\n", sep = "", file = stderr())
                        NULL
                      })
    if (is.null(exprs)) return(1L)
    status <- 0L
    for (expr in exprs) {
      calls <- NULL
      status <- tryCatch({
          shown <- withCallingHandlers(
            withVisible(eval(expr, envir = globalenv())),
            error = function(e) calls <<- sys.calls(),
            warning = function(w) {
              cat("Warning: ", conditionMessage(w), "\n", sep = "", file = stderr())
              invokeRestart("muffleWarning")
            })
          if (shown$visible) print(shown$value)
          0L
        },
        oi_exit = function(e) e$status,
        interrupt = function(e) {
          cat("\nInterrupted\n", file = stderr())
          130L
        },
        error = function(e) {
          report_error(e, calls)
          1L
        })
      if (status != 0L) break
    }
    status
  }

  repeat {
    line <- tryCatch(readLines(control, n = 1L, warn = FALSE), interrupt = function(e) NA)
    if (length(line) == 0L) break
    if (is.na(line[[1]]) || !nzchar(line[[1]])) next
    parts <- strsplit(line[[1]], " ", fixed = TRUE)[[1]]
    block <- parts[[1]]
    nonce <- parts[[2]]
    path <- paste(parts[-(1:2)], collapse = " ")
    status <- tryCatch(run_block(block, path), interrupt = function(e) 130L)
    close_figures()
    flush(stdout())
    flush(stderr())
    cat(sprintf("\033]5379;%s;%s;%d\007", nonce, block, status), file = marker_con)
    flush(marker_con)
  }
})
