"""Reports: Markdown (and the figures it links) from datasets, fits and side-by-side tables.

The only part of hierbench that imports plotting libraries (arviz-plots with
its matplotlib backend); import it explicitly.
"""

from ._report import Report, markdown_table

__all__ = ["Report", "markdown_table"]
