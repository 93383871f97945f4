"""Studies: many runs × networks × what-ifs × analyses from one YAML spec.

``load_spec`` validates a spec and expands it into cells (:mod:`llamp.study.spec`);
``run_study`` computes the cells not done yet on local processes, a Dask cluster or Slurm
(:mod:`llamp.study.execute`), stores one Analysis per cell and writes a tidy table
(:mod:`llamp.study.run`). The analyses a cell can run are one table,
:data:`llamp.study.analyses.ANALYSES`.
"""

from llamp.study.analyses import ANALYSES, AnalysisKind
from llamp.study.run import StudyReport, run_study, write_table
from llamp.study.spec import Cell, SpecError, Study, load_spec

__all__ = [
    "ANALYSES",
    "AnalysisKind",
    "Cell",
    "SpecError",
    "Study",
    "StudyReport",
    "load_spec",
    "run_study",
    "write_table",
]
