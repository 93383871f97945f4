"""Applications the validation builds or sets up outside the repository.

- **NPB CG** (NAS Parallel Benchmarks 3.4, MPI, Fortran): the sources of :data:`NPB` (a public
  GitHub mirror of NASA's releases, at a fixed commit) are cloned from GitHub, or from a local
  clone or mirror given instead (``--npb-source``), and built with ``mpif90`` into a cache
  directory (``$LLAMP_APPS_CACHE``, default ``~/.cache/llamp/apps``), once per commit and class.
  Open MPI's Fortran bindings call ``PMPI_*`` past the injector (C bindings only), so the
  build links ``benchmarks/apps/fortran_mpi.c``: Fortran bindings of NPB's communication calls
  that call the C ones, which the tracer and the injector wrap.
- **HPCC** (HPC Challenge 1.5): Debian's ``hpcc`` package (``scripts/setup.sh``), with the input
  of ``tests/data/apps/hpccinf.txt`` on a 1 × ``ranks`` process grid.
- **HPCC's PTRANS alone**: HPCC 1.5.0's release tarball as Debian's archive serves it
  (:data:`HPCC_TARBALL`, checked against its SHA-256; or a local copy given instead,
  ``--hpcc-source``), its PTRANS, input and HPL grid sources compiled with ``mpicc`` and the
  driver ``benchmarks/apps/hpcc_ptrans.c`` (once per driver version, in the cache directory).
  PTRANS draws its process grid's layout from the clock (``time(NULL)``) at each repetition;
  the build fixes that seed, so every run sends the same messages.

What cannot be built or found raises :class:`Unavailable` with a one-line reason, so the
validation skips that application and says why.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
APPS = HERE.parent / "tests" / "data" / "apps"


class Unavailable(Exception):
    """An application that cannot be built or run here (the message says why, on one line)."""


@dataclass(frozen=True)
class Source:
    """A directory of a public git repository at one commit."""

    repo: str  # owner/name on GitHub
    commit: str
    subdir: str

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}.git"

    def label(self) -> str:
        return f"github.com/{self.repo} at commit {self.commit}, {self.subdir}"


#: NPB 3.4 (MPI) as released by NASA, in a public mirror of the releases.
NPB = Source(
    repo="mbdevpl/nas-parallel-benchmarks",
    commit="6f8ec75d6951629d2eb7e3001433295d407230aa",
    subdir="NPB3.4-MPI",
)


def cache_dir() -> Path:
    """Where built applications are kept (``$LLAMP_APPS_CACHE``, else ``~/.cache/llamp/apps``)."""
    given = os.environ.get("LLAMP_APPS_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "llamp" / "apps"


def _run(argv: list[str], cwd: Path, log: Path) -> None:
    with open(log, "a") as out:
        out.write("$ " + " ".join(argv) + "\n")
        out.flush()
        done = subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise Unavailable(f"`{' '.join(argv)}` failed (exit {done.returncode}; see {log})")


def checkout(source: Source, dest: Path, origin: str | None = None) -> None:
    """``source.subdir`` at ``source.commit`` into ``dest`` (which must not exist), from
    ``origin`` (a git URL, clone or mirror; default GitHub)."""
    if shutil.which("git") is None:
        raise Unavailable("git not found")
    with tempfile.TemporaryDirectory(prefix="llamp-src-") as tmp:
        clone = Path(tmp) / "repo"
        log = Path(tmp) / "git.log"
        done = subprocess.run(
            ["git", "clone", "--quiet", "--bare", origin or source.url, str(clone)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise Unavailable(f"cannot clone {origin or source.url}: {last}")
        found = subprocess.run(
            ["git", "-C", str(clone), "cat-file", "-e", f"{source.commit}^{{commit}}"],
            capture_output=True,
            check=False,
        )
        if found.returncode != 0:
            raise Unavailable(f"{origin or source.url} has no commit {source.commit}")
        dest.mkdir(parents=True)
        archive = Path(tmp) / "src.tar"
        _run(
            ["git", "-C", str(clone), "archive", "-o", str(archive), source.commit, source.subdir],
            Path(tmp),
            log,
        )
        _run(["tar", "-xf", str(archive), "-C", str(dest)], Path(tmp), log)


def _make_def(fortran_flags: str, shim: Path) -> str:
    """NPB's ``config/make.def`` for Open MPI's or MPICH's compiler wrappers, linking the
    Fortran-to-C bindings ``shim``."""
    return "\n".join(
        [
            "MPIFC = mpif90",
            "FLINK = $(MPIFC)",
            f"FMPI_LIB = {shim}",
            "FMPI_INC =",
            f"FFLAGS = {fortran_flags}",
            "FLINKFLAGS = $(FFLAGS)",
            "MPICC = mpicc",
            "CLINK = $(MPICC)",
            "CMPI_LIB =",
            "CMPI_INC =",
            "CFLAGS = -O2",
            "CLINKFLAGS = $(CFLAGS)",
            "CC = cc",
            "BINDIR = ../bin",
            "CONVERTFLAG = -DFORTRAN_REC_SIZE=1",
            # randdp: randi8 spells its hexadecimal constants X'…', which gfortran rejects
            "RAND = randdp",
            "",
        ]
    )


def _fortran_flags() -> str:
    """-O2; with gfortran ≥ 10 also -fallow-argument-mismatch (NPB passes scalars and arrays
    to the same MPI routine through ``mpif.h``, which gfortran 10 made an error)."""
    done = subprocess.run(["mpif90", "--version"], capture_output=True, text=True, check=False)
    match = re.search(r"GNU Fortran[^\n]*?(\d+)\.\d+", done.stdout)
    return "-O2 -fallow-argument-mismatch" if match and int(match.group(1)) >= 10 else "-O2"


def build_npb(
    kernel: str = "cg", klass: str = "S", origin: str | None = None, cache: Path | None = None
) -> tuple[Path, str]:
    """NPB ``kernel`` of class ``klass`` built with ``mpif90`` (once per commit and class):
    (the executable, where its sources came from)."""
    for tool in ("mpif90", "mpicc", "make"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} not found (scripts/setup.sh installs it)")
    shim_source = HERE / "apps" / "fortran_mpi.c"
    digest = hashlib.sha256(shim_source.read_bytes()).hexdigest()[:12]
    root = (cache or cache_dir()) / f"npb-{NPB.commit[:12]}"
    tree = root / NPB.subdir
    exe = root / f"{kernel}.{klass}.{digest}.x"  # one per shim version
    flags = _fortran_flags()
    provenance = (
        NPB.label() + f", class {klass}, built with mpif90 {flags} and the C bindings of "
        "benchmarks/apps/fortran_mpi.c"
    )
    if exe.is_file():
        return exe, provenance
    if not tree.is_dir():
        staging = root.with_name(root.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        checkout(NPB, staging, origin)
        staging.rename(root)
    log = root / f"build-{kernel}.{klass}.log"
    shim = root / f"fortran_mpi.{digest}.o"
    _run(["mpicc", "-O2", "-c", str(shim_source), "-o", str(shim)], root, log)
    (tree / "config" / "make.def").write_text(_make_def(flags, shim))
    (tree / "bin").mkdir(exist_ok=True)
    built = tree / "bin" / f"{kernel}.{klass}.x"
    built.unlink(missing_ok=True)
    _run(["make", kernel, f"CLASS={klass}"], tree, log)
    if not built.is_file():
        raise Unavailable(f"the NPB build made no {built} (see {log})")
    built.rename(exe)
    return exe, provenance


def write_hpccinf(directory: Path, ranks: int, n: int | None = None) -> None:
    """``directory/hpccinf.txt``: the input of ``tests/data/apps/hpccinf.txt`` on a 1 ×
    ``ranks`` process grid, with HPL's problem size ``n`` if given."""
    lines = (APPS / "hpccinf.txt").read_text().splitlines()
    values = {"Ps": "1", "Qs": str(ranks)} | ({"Ns": str(n)} if n is not None else {})
    out = []
    for line in lines:
        words = line.split()
        if len(words) == 2 and words[1] in values:
            line = f"{values[words[1]]:<13}{words[1]}"
        out.append(line)
    (directory / "hpccinf.txt").write_text("\n".join(out) + "\n")


def hpcc_input(directory: Path, ranks: int) -> str:
    """Write ``hpccinf.txt`` for ``ranks`` ranks (the test input, 1 × ``ranks`` grid) into
    ``directory``; where HPCC comes from (``Unavailable`` without ``hpcc``)."""
    exe = shutil.which("hpcc")
    if exe is None:
        raise Unavailable("hpcc not found (apt-get install hpcc; scripts/setup.sh)")
    write_hpccinf(directory, ranks)
    if shutil.which("dpkg-query") is None:
        return exe
    version = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "hpcc"], capture_output=True, text=True
    ).stdout.strip()
    return f"Debian hpcc {version}" if version else exe


#: HPCC 1.5.0's release tarball in Debian's archive (the source of Debian's ``hpcc`` 1.5.0-3)
#: and its SHA-256 (the one Debian's ``hpcc_1.5.0-3.dsc`` lists).
HPCC_TARBALL = "http://deb.debian.org/debian/pool/main/h/hpcc/hpcc_1.5.0.orig.tar.gz"
HPCC_SHA256 = "0a6fef7ab9f3347e549fed65ebb98234feea9ee18aea0c8f59baefbe3cf7ffb8"

#: What the PTRANS driver links, relative to the unpacked tree: PTRANS, HPCC's input and
#: report (``src/io.c``), and the HPL pieces they call (input parsing, grid collectives).
PTRANS_SOURCES = (
    *(f"PTRANS/{name}.c" for name in ("cblacslt", "mem", "pdmatcmp", "pdmatgen", "pdtrans")),
    *(f"PTRANS/{name}.c" for name in ("pdtransdriver", "pmatgeninc", "sclapack")),
    "src/io.c",
    "hpl/testing/ptest/HPL_pdinfo.c",
    "hpl/testing/ptimer/HPL_ptimer_cputime.c",
    "hpl/src/auxil/HPL_fprintf.c",
    *(f"hpl/src/grid/HPL_{name}.c" for name in ("all_reduce", "broadcast", "max", "min")),
    "hpl/src/grid/HPL_reduce.c",
    *(f"hpl/src/pauxil/HPL_{name}.c" for name in ("pdlamch", "pwarn", "pabort")),
)
#: The machine-parameter probes, which HPCC's own build compiles without optimisation.
PTRANS_PROBES = ("src/noopt.c", "src/HPL_slamch.c", "hpl/src/auxil/HPL_dlamch.c")
#: PTRANS's clock seed for the process grid's layout, and the fixed seed the build puts there.
_GRID_SEED = ("mp = (int)time(NULL);", "mp = 0; /* llamp: a fixed grid layout */")


def _hpcc_tarball(origin: str | None, into: Path) -> Path:
    """The HPCC 1.5.0 tarball: ``origin`` (a local file or a URL; default
    :data:`HPCC_TARBALL`) copied into ``into`` and checked against :data:`HPCC_SHA256`."""
    origin = origin or HPCC_TARBALL
    target = into / "hpcc_1.5.0.orig.tar.gz"
    try:
        if "://" in origin:
            with urllib.request.urlopen(origin, timeout=60) as answer, open(target, "wb") as out:
                shutil.copyfileobj(answer, out)
        else:
            shutil.copyfile(origin, target)
    except OSError as err:
        raise Unavailable(f"cannot fetch {origin}: {err}") from None
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != HPCC_SHA256:
        raise Unavailable(f"{origin} is not HPCC 1.5.0 (SHA-256 {digest}, not {HPCC_SHA256})")
    return target


def build_ptrans(origin: str | None = None, cache: Path | None = None) -> tuple[Path, str]:
    """HPCC's PTRANS test alone (``benchmarks/apps/hpcc_ptrans.c``), built with ``mpicc``
    from HPCC 1.5.0 with a fixed grid-layout seed (once per driver version): (the executable,
    where its sources came from)."""
    if shutil.which("mpicc") is None:
        raise Unavailable("mpicc not found (scripts/setup.sh installs it)")
    driver = HERE / "apps" / "hpcc_ptrans.c"
    digest = hashlib.sha256(driver.read_bytes()).hexdigest()[:12]
    root = (cache or cache_dir()) / "hpcc-1.5.0"
    exe = root / f"ptrans.{digest}.x"
    provenance = (
        f"HPCC 1.5.0 ({HPCC_TARBALL}, SHA-256 {HPCC_SHA256[:12]}…), PTRANS alone with a fixed "
        "grid-layout seed, driver benchmarks/apps/hpcc_ptrans.c, built with mpicc -O2"
    )
    if exe.is_file():
        return exe, provenance
    tree = root / "hpcc-1.5.0"
    if not tree.is_dir():
        staging = root.with_name(root.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            with tarfile.open(_hpcc_tarball(origin, staging)) as tar:
                tar.extractall(staging, filter="data")
            if not (staging / "hpcc-1.5.0" / "PTRANS").is_dir():
                raise Unavailable(f"{origin or HPCC_TARBALL} holds no hpcc-1.5.0/PTRANS")
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        staging.rename(root)
    seeded = tree / "PTRANS" / "pdtransdriver.c"
    text = seeded.read_text()
    if _GRID_SEED[1] not in text:
        if text.count(_GRID_SEED[0]) != 1:
            raise Unavailable(f"{seeded} does not seed its grid layout as HPCC 1.5.0 does")
        seeded.write_text(text.replace(*_GRID_SEED))
    log = root / "build-ptrans.log"
    objects = root / f"obj-{digest}"
    objects.mkdir(exist_ok=True)
    flags = ["-I", str(tree / "include"), "-I", str(tree / "hpl" / "include"), "-DHPL_CALL_CBLAS"]
    built = []
    for level, sources in (
        ("-O2", (driver, *(tree / s for s in PTRANS_SOURCES))),
        ("-O0", tuple(tree / s for s in PTRANS_PROBES)),
    ):
        for source in sources:
            obj = objects / f"{source.stem}.o"
            _run(["mpicc", level, *flags, "-c", str(source), "-o", str(obj)], root, log)
            built.append(str(obj))
    # Reference BLAS: HPL declares the few CBLAS routines PTRANS's check calls, and Debian's
    # libblas3 exports them (no -dev package needed).
    partial = exe.with_suffix(".partial")
    _run(["mpicc", "-o", str(partial), *built, "-l:libblas.so.3", "-lm"], root, log)
    partial.rename(exe)
    return exe, provenance
