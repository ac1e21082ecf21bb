// oi-tui kernel driver for Java, through the JShell API.
//
// Reads one command a line from the control FIFO named by args[0]: "BLOCK NONCE PATH".
// Splits the code in PATH into snippets and evaluates them in one JShell state that runs in
// this JVM, so that variables, methods, classes and imports persist, then writes the end
// marker ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL to the terminal. Code never passes through
// stdin. A snippet that fails stops the block with status 1; System.exit ends the kernel.

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.UnresolvedReferenceException;

public class Driver {
    private static volatile boolean running = false;
    private static volatile boolean interrupted = false;
    /** Counts blocks, so that stopping one never reaches the next. */
    private static volatile long generation = 0;

    public static void main(String[] args) throws Exception {
        String fifo = args[0];
        OutputStream marker;
        try {
            marker = new FileOutputStream("/dev/tty");
        } catch (Exception e) {
            marker = System.out;
        }
        PrintStream out = System.out;
        PrintStream err = System.err;
        JShell shell = JShell.builder()
                .executionEngine("local")
                .out(out)
                .err(err)
                .in(System.in)
                .build();
        SourceCodeAnalysis analysis = shell.sourceCodeAnalysis();
        // Warm the compiler up, so that the first block is not the slow one.
        shell.eval("import java.util.*;");
        shell.eval("import java.io.*;");
        shell.eval("import java.nio.file.*;");
        shell.eval("import java.util.stream.*;");

        sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> {
            if (!running) {
                return;
            }
            interrupted = true;
            // A snippet may still be compiling when the signal comes, with nothing yet to stop:
            // keep stopping until the block has ended.
            final long block = generation;
            Thread stopper = new Thread(() -> {
                while (running && generation == block) {
                    shell.stop();
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            stopper.setDaemon(true);
            stopper.start();
        });

        BufferedReader control = new BufferedReader(new FileReader(fifo, StandardCharsets.UTF_8));
        String line;
        while ((line = control.readLine()) != null) {
            String[] parts = line.split(" ", 3);
            if (parts.length < 3) {
                continue;
            }
            int status;
            interrupted = false;
            generation++;
            running = true;
            try {
                status = runBlock(shell, analysis, Files.readString(Path.of(parts[2])), err);
            } catch (Throwable t) {
                t.printStackTrace(err);
                status = 1;
            } finally {
                running = false;
            }
            if (interrupted) {
                err.println();
                err.println("Interrupted");
                status = 130;
            }
            out.flush();
            err.flush();
            String end = "\u001b]5379;" + parts[1] + ";" + parts[0] + ";" + status + "\u0007";
            marker.write(end.getBytes(StandardCharsets.UTF_8));
            marker.flush();
        }
        shell.close();
    }

    private static int runBlock(JShell shell, SourceCodeAnalysis analysis, String source, PrintStream err) {
        String rest = source;
        while (!rest.isBlank() && !interrupted) {
            SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(rest);
            String snippet;
            if (info.completeness() == SourceCodeAnalysis.Completeness.EMPTY) {
                break;
            }
            if (info.completeness().isComplete()) {
                snippet = info.source();
                rest = info.remaining();
            } else {
                // An incomplete tail: hand it over whole so that JShell reports the error.
                snippet = rest;
                rest = "";
            }
            if (!evalSnippet(shell, snippet, err)) {
                return 1;
            }
        }
        return 0;
    }

    private static boolean evalSnippet(JShell shell, String source, PrintStream err) {
        List<SnippetEvent> events = shell.eval(source);
        boolean ok = true;
        for (SnippetEvent event : events) {
            if (event.causeSnippet() != null) {
                continue;
            }
            Snippet snippet = event.snippet();
            if (event.status() == Snippet.Status.REJECTED) {
                ok = false;
                shell.diagnostics(snippet).forEach(d -> printDiag(d, snippet.source(), err));
                if (shell.diagnostics(snippet).findAny().isEmpty()) {
                    err.println("Error: rejected: " + snippet.source().strip());
                }
            }
            if (event.exception() != null) {
                ok = false;
                printException(event.exception(), err);
            } else if (event.status() == Snippet.Status.VALID && event.value() != null
                    && (snippet.kind() == Snippet.Kind.EXPRESSION
                        || snippet.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND)) {
                System.out.println(event.value());
            }
        }
        return ok;
    }

    private static void printDiag(Diag diag, String source, PrintStream err) {
        err.println("Error: " + diag.getMessage(null));
        long pos = diag.getStartPosition();
        if (pos >= 0 && pos <= source.length()) {
            int start = source.lastIndexOf('\n', (int) Math.max(0, pos - 1)) + 1;
            int end = source.indexOf('\n', (int) pos);
            String line = source.substring(start, end < 0 ? source.length() : end);
            err.println("    " + line);
            err.println("    " + " ".repeat((int) pos - start) + "^");
        }
    }

    private static void printException(Exception e, PrintStream err) {
        if (e instanceof UnresolvedReferenceException) {
            err.println("Error: " + e.getMessage());
            return;
        }
        String name = e instanceof EvalException ? ((EvalException) e).getExceptionClassName()
                : e.getClass().getName();
        String message = e.getMessage();
        err.println("Exception " + name + (message == null ? "" : ": " + message));
        for (StackTraceElement frame : e.getStackTrace()) {
            if (frame.getClassName().startsWith("jdk.jshell.") || frame.getClassName().equals("Driver")) {
                break;
            }
            err.println("\tat " + frame);
        }
        Throwable cause = e.getCause();
        if (cause != null) {
            err.println("Caused by: " + cause);
        }
    }
}
