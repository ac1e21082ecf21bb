# oi-tui kernel driver for Python.
#
# Reads one command a line from the control FIFO named by argv[1]: "BLOCK NONCE PATH".
# Runs the code in PATH in one persistent namespace, then writes the end marker
# ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL to the terminal. Code never passes through stdin,
# so stdin stays free for the block (input(), getpass, ...).
import ast
import linecache
import os
import sys
import traceback
import types


def main():
    fifo = sys.argv[1]
    # Behave like the interactive interpreter: import from the working directory, no argv.
    sys.argv = [""]
    sys.path[0] = ""
    try:
        marker_fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        marker_fd = 1
    namespace = {"__name__": "__main__", "__builtins__": __builtins__, "__doc__": None}
    figures = Figures(os.environ.pop("OI_TUI_IMAGES", ""))
    control = open(fifo, "r", encoding="utf-8")
    while True:
        try:
            line = control.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        block, nonce, path = line.rstrip("\n").split(" ", 2)
        status = 1
        try:
            repair_stdio()
            status = run_block(block, path, namespace)
        except KeyboardInterrupt:
            status = 130
        except BaseException:
            # Reporting the block's own error failed (its stderr is gone): status 1 stands.
            pass
        finally:
            repair_stdio()
            figures.block_ended()
            marker_fd = write_marker(marker_fd, nonce, block, status)


def repair_stdio():
    """Reopens on the terminal the standard descriptors and streams a block closed
    (os.close(1), sys.stdout.close()), so that later blocks can print."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            try:
                new = os.open("/dev/tty", flags | os.O_NOCTTY)
                if new != fd:
                    os.dup2(new, fd)
                    os.close(new)
                # Children inherit 0-2 (os.open makes descriptors close-on-exec).
                os.set_inheritable(fd, True)
            except OSError:
                pass
    # Sent elsewhere for good (os.dup2 onto a file, sys.stdout = open(os.devnull, "w")):
    # every later block would print to nowhere, and the model read "no output". Each block
    # starts on the terminal again; a wrapper that still writes to it (colorama) stays.
    for fd in (1, 2):
        try:
            if not os.isatty(fd):
                new = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
                os.dup2(new, fd)
                os.close(new)
                os.set_inheritable(fd, True)
        except OSError:
            pass
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        stream = getattr(sys, name)
        if stream is None or getattr(stream, "closed", False):
            try:
                setattr(sys, name, open(fd, mode, buffering=1, closefd=False,
                                        errors="backslashreplace"))
            except OSError:
                pass
        elif name != "stdin":
            try:
                on_terminal = os.isatty(stream.fileno())
            except Exception:
                on_terminal = False
            if not on_terminal:
                original = getattr(sys, "__%s__" % name)
                if original is None or getattr(original, "closed", False):
                    try:
                        original = open(fd, mode, buffering=1, closefd=False,
                                        errors="backslashreplace")
                    except OSError:
                        continue
                setattr(sys, name, original)


class Figures:
    """Saves as PNG, into the directory oi-tui gathers images from, what a block shows:
    matplotlib figures (plt.show(), and figures still open when the block ends, as a
    notebook would show them) and PIL images (Image.show()). matplotlib draws with its Agg
    renderer through a backend of this driver's, so no display is needed; the hooks are set
    when the block imports matplotlib or PIL, and touch nothing else."""

    BACKEND = "oi_tui_backend"

    def __init__(self, directory):
        self.directory = directory
        self.count = 0
        if directory:
            writable_matplotlib_config()
            sys.meta_path.insert(0, AfterImport({
                "matplotlib": self.use_backend,
                "PIL.ImageShow": self.register_viewer,
            }))

    def path(self):
        self.count += 1
        return os.path.join(self.directory, "%06d.png" % self.count)

    def use_backend(self, matplotlib):
        from matplotlib.backend_bases import FigureManagerBase
        from matplotlib.backends import backend_agg
        backend = types.ModuleType(self.BACKEND)
        backend.FigureCanvas = backend_agg.FigureCanvasAgg
        backend.FigureManager = FigureManagerBase
        backend.show = self.show
        sys.modules[self.BACKEND] = backend
        matplotlib.rcParams["backend"] = "module://" + self.BACKEND

    def show(self, *args, **kwargs):
        self.save_open_figures()

    def save_open_figures(self):
        """Saves and closes every open figure (while the backend is this driver's: a
        block that chose another backend keeps its windows)."""
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None or pyplot.get_backend() != "module://" + self.BACKEND:
            return
        from matplotlib._pylab_helpers import Gcf
        for manager in Gcf.get_all_fig_managers():
            try:
                manager.canvas.figure.savefig(self.path(), format="png")
            except Exception as e:
                print("oi-tui: a figure could not be saved: %s" % e, file=sys.stderr)
        pyplot.close("all")

    def register_viewer(self, image_show):
        figures = self

        class Viewer(image_show.Viewer):
            def show(self, image, **options):
                if image.mode not in ("1", "L", "LA", "I", "P", "RGB", "RGBA"):
                    image = image.convert("RGBA")
                image.save(figures.path(), "PNG")
                return 1

        image_show.register(Viewer, -1)

    def block_ended(self):
        if not self.directory:
            return
        try:
            self.save_open_figures()
        except Exception:
            pass


def writable_matplotlib_config():
    """Under a sandbox the home directory is read-only: matplotlib would warn at every
    import and build its font cache again each time. It gets a private directory in the
    temp dir instead, kept between kernels (only when its own is not writable)."""
    if "MPLCONFIGDIR" in os.environ:
        return
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    own = os.path.join(base, "matplotlib")
    probe = own
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    if os.access(probe, os.W_OK):
        return
    spare = os.path.join(os.environ.get("TMPDIR") or "/tmp", "oi-tui-matplotlib-%d" % os.getuid())
    try:
        os.makedirs(spare, mode=0o700, exist_ok=True)
        info = os.lstat(spare)
        # Not a link, and the user's own: another user cannot plant it.
        if os.path.islink(spare) or info.st_uid != os.getuid():
            return
        os.environ["MPLCONFIGDIR"] = spare
    except OSError:
        pass


class AfterImport:
    """Runs a hook on a module right after it is first imported."""

    def __init__(self, hooks):
        self.hooks = hooks

    def find_spec(self, name, path, target=None):
        hook = self.hooks.get(name)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            del self.hooks[name]
            spec.loader = HookedLoader(spec.loader, hook)
        return spec


class HookedLoader:
    def __init__(self, loader, hook):
        self.loader = loader
        self.hook = hook

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        try:
            self.hook(module)
        except Exception as e:
            print("oi-tui: images from %s will not be shown: %s" % (module.__name__, e),
                  file=sys.stderr)


def run_block(block, path, namespace):
    name = "<block %s>" % block
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        lines = source.splitlines(True)
        linecache.cache[name] = (len(source), None, lines, name)
        tree = ast.parse(source, name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:
            value = eval(compile(last, name, "eval"), namespace)
            if value is not None:
                sys.displayhook(value)
        return 0
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException as e:
        tb = e.__traceback__
        # Drop this driver's own frames; keep the block's and the libraries'.
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        if isinstance(e, KeyboardInterrupt):
            print(file=sys.stderr)
        traceback.print_exception(type(e), e, tb)
        return 130 if isinstance(e, KeyboardInterrupt) else 1


def write_marker(fd, nonce, block, status):
    """Writes the end marker; returns the descriptor to write the next one to (the
    terminal reopened, if the block closed it)."""
    marker = ("\x1b]5379;%s;%s;%d\x07" % (nonce, block, status)).encode()
    reopened = False
    while True:
        try:
            for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                try:
                    stream.flush()
                except Exception:
                    pass
            os.write(fd, marker)
            return fd
        except KeyboardInterrupt:
            continue
        except OSError:
            if reopened:
                raise
            reopened = True
            try:
                fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
            except OSError:
                fd = 1


main()
