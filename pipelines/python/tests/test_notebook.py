"""The example notebook runs from start to end on the shared real traces, and shows what it computed."""

from pathlib import Path

import nbformat
from conftest import TRACES
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "analysis.ipynb"


def test_analysis_notebook_runs(monkeypatch):
    monkeypatch.setenv("DATACRUMBS_TRACES", str(TRACES))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2
    ranked = next(o for o in outputs if "'vfs': [" in o.get("data", {}).get("text/plain", ""))
    assert "vfs::" in ranked["data"]["text/plain"]
