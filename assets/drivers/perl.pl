# oi-tui kernel driver for Perl.
#
# Reads one command a line from the control FIFO named by $ARGV[0]: "BLOCK NONCE PATH".
# Runs the code in PATH in package main, so that package variables and subs persist (a
# `my` variable lives until the end of its block, as in any Perl file), then writes the end
# marker ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL to the terminal. Code never passes through
# stdin.
package OiTuiDriver;

# Defined before any lexical variable of this driver, so block code cannot see them.
sub eval_block { return eval $_[0]; }

use strict;
use warnings;
use IO::Handle;

my $fifo = shift @ARGV;
STDOUT->autoflush(1);
STDERR->autoflush(1);
my $marker;
open($marker, '>', '/dev/tty') or $marker = \*STDOUT;
$marker->autoflush(1);
open(my $control, '<', $fifo) or die "oi-tui: cannot open control FIFO $fifo: $!\n";

my $interrupted = 0;
$SIG{INT} = sub { $interrupted = 1; };

while (1) {
    my $line = <$control>;
    if (!defined $line) {
        if ($interrupted) {
            $interrupted = 0;
            $control->clearerr;
            next;
        }
        last;
    }
    chomp $line;
    my ($block, $nonce, $path) = split / /, $line, 3;
    next unless defined $path;
    my $status = run_block($block, $path);
    repair_stdio();
    STDOUT->flush;
    STDERR->flush;
    print {$marker} "\e]5379;$nonce;$block;$status\a";
}

# A block that closed STDOUT or STDERR (or STDIN) would leave every later block mute:
# they are opened again on the terminal (on descriptors 0-2, which are free again).
sub repair_stdio {
    open(STDIN, '<', '/dev/tty') unless defined fileno(STDIN);
    if (!defined fileno(STDOUT)) {
        open(STDOUT, '>', '/dev/tty') and STDOUT->autoflush(1);
    }
    if (!defined fileno(STDERR)) {
        open(STDERR, '>', '/dev/tty') and STDERR->autoflush(1);
    }
}

sub run_block {
    my ($block, $path) = @_;
    open(my $fh, '<:encoding(UTF-8)', $path) or do {
        print STDERR "oi-tui: cannot read block file: $!\n";
        return 1;
    };
    my $code = do { local $/; <$fh> };
    close $fh;
    local $SIG{INT} = sub { die "Interrupted\n" };
    my $ok = eval_block("package main;\nno strict;\nno warnings;\n#line 1 \"<block $block>\"\n$code\n;1");
    return 0 if $ok;
    my $err = $@;
    if ($err eq "Interrupted\n") {
        print STDERR "\nInterrupted\n";
        return 130;
    }
    print STDERR $err;
    return 1;
}
