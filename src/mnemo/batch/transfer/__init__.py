"""Import and export: files of conversations and facts in, everything a person owns out.

`mnemo.batch.export` writes the export; `importer.import_file` reads any of the
formats of `formats.Format` (see docs/export-format.md).
"""

from __future__ import annotations

from .formats import CONVERSATION_FORMATS, FACT_FORMATS, Format
from .importer import import_file
from .report import ImportRefused, ImportReport
from .restore import Destination

__all__ = [
    "CONVERSATION_FORMATS",
    "FACT_FORMATS",
    "Destination",
    "Format",
    "ImportRefused",
    "ImportReport",
    "import_file",
]
