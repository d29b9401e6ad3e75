"""What the benchmark scripts share: the machine's description, waiting for a quiet machine,
and replacing one section (or one machine's subsection) of docs/BENCHMARKS.md.

MRCNN_BENCHMARKS_MD names another file to write instead of docs/BENCHMARKS.md: a copy, to try
a script's --write without touching the real document.

MRCNN_BENCH_ISA=avx2 runs a benchmark with the kernels of an AVX2-only CPU on a CPU that has
more (AVX-512, AMX): oneDNN's (LibTorch's convolutions, OpenVINO's convolutions and matrix
products) through ONEDNN_MAX_CPU_ISA, OpenVINO's own nodes and its choices of node through
OV_CPU_MAX_ISA (both are needed: with oneDNN's cap alone the CPU plugin still picks AVX-512
nodes and then finds no oneDNN kernel for some of them), ATen's own kernels through
ATEN_CPU_CAPABILITY, and no bf16 rows. The clock and caches stay this CPU's: the
subsection's heading says it is a capped CPU, not an AVX2 one."""
import contextlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "docs/BENCHMARKS.md"
LAST_RESULT = "### Last result"
# The heading given to a section's hand-written results and notes when a "### Last result"
# subsection is first put in front of them, so that later rewrites leave them alone.
EARLIER = "### Earlier results and notes"
# A section's first hand-written result: a paragraph that begins "Last result" or with a date.
FIRST_RESULT = r"(?:Last result|\d{4}-\d\d-\d\d)"


def benchmarks_path():
    """The document --write rewrites: $MRCNN_BENCHMARKS_MD, else docs/BENCHMARKS.md."""
    return Path(os.environ.get("MRCNN_BENCHMARKS_MD") or BENCHMARKS)


def load_average():
    return os.getloadavg()[0]


def wait_quiet(limit, poll_seconds=10, most_seconds=600):
    """Waits until the 1-minute load average is below `limit` (None: no wait), at most
    `most_seconds`."""
    if limit is None:
        return
    deadline = time.time() + most_seconds
    while load_average() >= limit and time.time() < deadline:
        print(f"load {load_average():.1f} >= {limit}: waiting", flush=True)
        time.sleep(poll_seconds)


# The instruction set a benchmark is capped to (MRCNN_BENCH_ISA), set before any child process or
# library reads it.
ISA_CAP = os.environ.get("MRCNN_BENCH_ISA", "").strip().lower()
if ISA_CAP and ISA_CAP != "avx2":
    sys.exit(f"MRCNN_BENCH_ISA={ISA_CAP}: only avx2 is known (or unset: the CPU's own)")
if ISA_CAP:
    os.environ["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    os.environ["OV_CPU_MAX_ISA"] = "AVX2"
    os.environ["ATEN_CPU_CAPABILITY"] = "avx2"


def cpu_name():
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def cpu_flags():
    """The first processor's flags in /proc/cpuinfo (empty where it cannot be read)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


# The engine's flags for bf16 (autocast in LibTorch, OpenVINO's inference precision, an int8
# model's float layers), and for float32 whatever the spec asks.
BF16_FLAGS = ["--set", "use_amp=True", "--set", "amp_dtype=bf16"]
FP32_FLAGS = ["--set", "use_amp=False"]


def native_bf16():
    """Whether the CPU computes bfloat16 itself (AVX-512 BF16 or AMX). Without, oneDNN emulates
    it through float conversions and a bf16 row times the emulation: minutes an image."""
    return not ISA_CAP and bool(cpu_flags() & {"avx512_bf16", "amx_bf16"})


def float_flags_unless_bf16():
    """The engine's flags for a task that times or checks in the spec's precision (the int8
    export): none where the CPU computes bf16 itself, else float32, as the engine falls back
    to on such a CPU whatever the spec asks (and the flags say so where the kernels are
    capped to AVX2, which the engine's own bf16 test does not see)."""
    return [] if native_bf16() else FP32_FLAGS


def kernels_folder(path):
    """A work folder for what depends on the kernels (an int8 export's choices): its own one
    where they are capped (path-avx2), else path."""
    return f"{path}-{ISA_CAP}" if ISA_CAP else path


def cpu_features():
    """The vector and matrix extensions that decide LibTorch's CPU speed, as one phrase."""
    flags = cpu_flags()
    named = [name for flag, name in (("avx512f", "AVX-512"), ("avx512_bf16", "AVX-512 BF16"),
                                     ("amx_tile", "AMX")) if flag in flags]
    own = ", ".join(named) if named else ("AVX2 only" if "avx2" in flags else "no AVX2")
    return f"AVX2 kernels: {own} capped by MRCNN_BENCH_ISA=avx2" if ISA_CAP else own


def out_of_date(made, *inputs):
    """Whether the file `made` is missing or older than any of `inputs` (the engine that made
    it, the checkpoint it came from): a benchmark then makes it again rather than time a stale
    one."""
    if not os.path.exists(made):
        return True
    return any(os.path.getmtime(made) < os.path.getmtime(i) for i in inputs if os.path.exists(i))


def memory_gib():
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path("/proc/meminfo").read_text().split()[1]) / 2 ** 20
    return None


def machine_line(load_before):
    """The start of a result's header line: when (UTC), on what, how busy the machine was."""
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores "
            f"(`{cpu_name()}`, {cpu_features()}), load average {load_before:.1f} before the run")


def _heading(doc, heading, start=0, end=None):
    """Where the line `heading` starts in doc[start:end] (a whole line, not a longer heading
    that ends with it), or -1."""
    end = len(doc) if end is None else end
    found = re.compile("^" + re.escape(heading) + "$", re.M).search(doc, start, end)
    return found.start() if found else -1


def _section(doc, title):
    """(start, end) of the section `title`: from its heading to the next "## " heading (the
    end just after the blank line before it), or None."""
    start = _heading(doc, title)
    if start < 0:
        return None
    nxt = re.compile(r"^## ", re.M).search(doc, start + len(title))
    return start, (nxt.start() if nxt else len(doc))


def _write(path, doc):
    path.write_text(doc.rstrip("\n") + "\n")


def replace_section(title, text, path=None):
    """Replaces the section that starts with the heading `title` (up to the next "## "
    heading) by `text`, or appends `text` when there is no such section."""
    path = path or benchmarks_path()
    doc = path.read_text()
    found = _section(doc, title)
    if found is None:
        doc = doc.rstrip("\n") + "\n\n" + text
    else:
        start, end = found
        doc = doc[:start] + text.rstrip("\n") + ("\n\n" + doc[end:] if end < len(doc) else "")
    _write(path, doc)


def replace_subsection(title, heading, text, path=None):
    """Replaces, inside the section `title`, the subsection whose "### " heading is `heading`
    (up to the next "### " or "## " heading) by `text`, or adds `text` at the end of the
    section; a missing section is appended with `text` as its only subsection. Lets one
    machine's table be rewritten without touching another machine's."""
    path = path or benchmarks_path()
    doc = path.read_text()
    found = _section(doc, title)
    if found is None:
        replace_section(title, title + "\n\n" + text, path)
        return
    start, end = found
    section = doc[start:end]
    sub = _heading(section, heading)
    if sub < 0:
        section = section.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n\n"
    else:
        nxt = re.compile(r"^###? ", re.M).search(section, sub + len(heading))
        rest = section[nxt.start():] if nxt else ""
        section = section[:sub] + text.rstrip("\n") + "\n\n" + rest
    doc = doc[:start] + section.rstrip("\n") + ("\n\n" + doc[end:] if end < len(doc) else "")
    _write(path, doc)


def machine_heading():
    """This machine's subsection heading: "### <CPU model> (<its vector features>)"."""
    return "### %s (%s)" % (cpu_name(), cpu_features())


def replace_machine_subsection(title, text, path=None):
    """Rewrites this machine's subsection of the section `title` (heading from
    machine_heading(), then `text`); other machines' subsections stay."""
    heading = machine_heading()
    replace_subsection(title, heading, heading + "\n\n" + text, path)


def write_last_result(title, block, path=None):
    """Rewrites the "### Last result" subsection of the section `title` with `block` (the
    run's header line and table). The first time, when the section has none, the subsection
    goes in front of the section's first hand-written result (a paragraph that starts with
    "Last result" or a date), and that paragraph and everything after it in the section get
    the heading "### Earlier results and notes": every later rewrite then replaces only the
    generated subsection, and no hand-written line is lost. Without such a paragraph the
    subsection is added at the end of the section."""
    path = path or benchmarks_path()
    text = LAST_RESULT + "\n\n" + block.strip("\n") + "\n"
    doc = path.read_text()
    found = _section(doc, title)
    if found is not None:
        start, end = found
        section = doc[start:end]
        if _heading(section, LAST_RESULT) < 0:
            # The first hand-written result, if it comes before any subsection.
            first = re.compile(r"(?<=\n\n)" + FIRST_RESULT).search(section)
            sub = re.compile(r"^###? ", re.M).search(section, len(title))
            if first and (sub is None or first.start() < sub.start()):
                at = start + first.start()
                _write(path, doc[:at] + text + "\n" + EARLIER + "\n\n" + doc[at:])
                return
    replace_subsection(title, LAST_RESULT, text, path)


def find_program(name):
    """One of the build's programs: $MRCNN_BUILD_DIR/bin/NAME (build/ by default); exits
    saying how to build it when it is not there."""
    build = os.environ.get("MRCNN_BUILD_DIR", os.path.join(ROOT, "build"))
    path = os.path.join(build, "bin", name)
    if not os.access(path, os.X_OK):
        raise SystemExit(name + " not built: flock /tmp/mrcnn-build.lock scripts/build.sh " + name)
    return path


def venv_python(name, inherit=False):
    """The python of a peer's own venv ($MRCNN_VENV/NAME, .venv/NAME by default), made on first
    use from scripts/python-requirements-NAME.txt. With `inherit`, the venv also sees the
    project's .venv (torch, torchvision, numpy: a .pth file names its site-packages) and its
    requirements are installed with --no-deps, so the peer runs on the same torch."""
    venv = os.environ.get("MRCNN_VENV", os.path.join(ROOT, ".venv"))
    python = os.path.join(venv, name, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", os.path.join(venv, name)], check=True)
        extra = []
        if inherit:
            own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                 check=True, capture_output=True, text=True).stdout.strip()
            base = os.path.join(venv, "bin", "python")
            theirs = subprocess.run([base, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                    check=True, capture_output=True, text=True).stdout.strip()
            with open(os.path.join(own, "project-venv.pth"), "w") as f:
                f.write(theirs + "\n")
            extra = ["--no-deps"]
        subprocess.run([python, "-m", "pip", "install", "-q", *extra, "-r",
                        os.path.join(ROOT, "scripts", "python-requirements-%s.txt" % name)],
                       check=True)
    return python


def report_section(title, header, rows, write):
    """Prints a result (its header line and table rows) and, with `write`, makes it the whole
    section `title` of the document."""
    print(header)
    print("\n".join(rows))
    if write:
        replace_section(title, title + "\n\n" + header + "\n\n" + "\n".join(rows) + "\n")
        print(f"{benchmarks_path()}: {title[3:]} rewritten")

