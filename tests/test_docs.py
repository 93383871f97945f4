"""The documentation stays attached to the code: every ``docs/<file>.md §Section`` reference in
the repository names an existing heading, the docs' own links resolve, the README lists every
CLI command, the formats page every registered format, and nothing refers to files outside the
repository (a fresh clone has no shared folder beside it) or to the old design document's numbering."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

#: The steering folder beside a developer's checkout (written so this file does not match).
SHARED = "../" + "shared"
REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
TEXT_SUFFIXES = {".py", ".md", ".sh", ".c", ".h", ".toml", ".yaml", ".yml", ".txt", ""}


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    paths = [REPO / line for line in out if line and not line.startswith("tests/data/")]
    return [p for p in paths if p.is_file() and p.suffix in TEXT_SUFFIXES]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _headings(doc: Path) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^#{1,6} (.+)$", doc.read_text(), re.M)]


def test_docs_exist():
    for name in ("model", "architecture", "formats", "extending", "analyses"):
        assert (DOCS / f"{name}.md").is_file()
    assert (REPO / "LICENSE").read_text().startswith("BSD 3-Clause License")


def test_every_section_reference_names_a_heading():
    """``docs/model.md §Cost semantics`` (and ``…, §Performance targets`` after it)."""
    ref = re.compile(r"docs/(\w+)\.md((?:,? §[^§]*)+)")
    found = 0
    for path in _tracked():
        if path.suffix == ".md" and path.parent == DOCS:
            continue
        for line_no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for m in ref.finditer(line):
                doc = DOCS / f"{m.group(1)}.md"
                where = f"{path.relative_to(REPO)}:{line_no}"
                assert doc.is_file(), f"{where}: {doc.name} does not exist"
                headings = _headings(doc)
                for part in m.group(2).split("§")[1:]:
                    assert any(part.startswith(h) for h in headings), (
                        f"{where}: no heading of {doc.name} starts {part.strip()!r}"
                    )
                    found += 1
    assert found > 40  # the code cites the docs throughout


def test_links_between_docs_resolve():
    link = re.compile(r"\]\(([^)#\s]+\.md|[^)#\s]*)(#[^)\s]+)?\)")
    for doc in [*DOCS.glob("*.md"), REPO / "README.md"]:
        for m in link.finditer(doc.read_text()):
            target, anchor = m.group(1), m.group(2)
            if target.startswith("http"):
                continue
            dest = (doc.parent / target).resolve() if target else doc
            assert dest.exists(), f"{doc.name}: link to missing {target}"
            if anchor and dest.suffix == ".md":
                slugs = {_slug(h) for h in _headings(dest)}
                assert anchor[1:] in slugs, f"{doc.name}: no heading for {target}{anchor}"


def test_readme_lists_every_command():
    from llamp.cli import cli

    readme = (REPO / "README.md").read_text()
    missing = [
        name for name in cli.load_all() if not re.search(rf"^\s+llamp {name}\b", readme, re.M)
    ]
    assert missing == []


def test_formats_page_covers_every_registered_format():
    from llamp.ingest import FORMATS

    text = (DOCS / "formats.md").read_text()
    for name in FORMATS:
        assert f"| `{name}` |" in text, f"docs/formats.md: no row for {name}"


def test_ui_pages_named_in_the_architecture():
    from llamp.ui.navigation import PAGES

    text = " ".join((DOCS / "architecture.md").read_text().split())
    for spec in PAGES:
        assert spec.title in text, f"docs/architecture.md does not mention the {spec.title} page"


def test_paper_example_numbers_in_model_doc_are_the_engines():
    """The worked example's numbers in docs/model.md are what the engine computes."""
    from hand_graphs import paper_example

    from llamp.lp import critical_latencies, max_parameter_within, predict
    from llamp.params import LogGPS

    text = (DOCS / "model.md").read_text()
    params = LogGPS(L=500.0, o=0.0, G=5.0, S=1 << 30, nic="overlap")  # the paper's model
    p = predict(paper_example(), params)
    assert (p.runtime_ns, p.lambda_L, p.lambda_G) == (pytest.approx(1615.0), 1.0, 3.0)
    crit = critical_latencies(paper_example(), params.with_(L=0.0), 0.0, 1000.0).critical
    assert crit == [pytest.approx(385.0)]
    assert max_parameter_within(paper_example(), params, 2000.0) == pytest.approx(885.0)
    for shown in (
        "1.615 µs",
        "0.385 µs",
        "0.885 µs",
        "T(L) = max(1.1, max(L + 0.115, 0.5) + 1) µs",
    ):
        assert shown in text


def test_nothing_refers_outside_the_repository():
    for path in _tracked():
        if path.name == "test_docs.py":
            continue
        text = path.read_text(errors="replace")
        assert SHARED not in text, f"{path.relative_to(REPO)} refers to {SHARED}"


def test_no_citation_of_the_old_design_numbering():
    citing = {
        str(path.relative_to(REPO))
        for path in _tracked()
        if "DESIGN §" in path.read_text(errors="replace") and path.name != "test_docs.py"
    }
    assert not citing, sorted(citing)


#: Folder of each subpackage (``pyproject.toml``'s package-dir) and the core.
PACKAGES = ("llamp", "llamp/cli", "ingest", "ingest/tracer", "lp", "graphdb", "injector", "study")
PACKAGES += ("ui", "ui/views")


def test_the_architecture_lists_every_module():
    """docs/architecture.md §Packages names every module of every package."""
    text = (DOCS / "architecture.md").read_text()
    section = text[text.index("## Packages") :]
    section = section[: section.index("\n## ", 1)]
    missing = [
        f"{folder}/{path.name}"
        for folder in PACKAGES
        for path in sorted((REPO / folder).glob("*.py"))
        if path.name not in ("__init__.py", "__main__.py") and f"`{path.name}`" not in section
    ]
    assert missing == [], f"docs/architecture.md §Packages does not list {missing}"
