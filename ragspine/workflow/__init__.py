"""The workflow preview: the configured pipeline as a redacted, Dify-DSL-compatible picture.

``ragspine workflow preview`` and ``GET /v1/workflow/preview`` draw the pipeline (chunker,
legs, fusion, rerank, postprocess, exits) as a Dify workflow graph — nodes, edges, labels and
geometry only. A picture of the pipeline, not evidence and not executable; it holds no
prompts, datasets, credentials or variables because the :class:`PipelineView` it is drawn
from holds none.

    layout: view.py (PipelineView: names and numbers only) · dify.py (the DSL projection and
    its structural check) (`ragspine workflow`: ragspine/cli/workflow.py)
"""

from ragspine.workflow.dify import DIFY_DSL_VERSION, check_dify_graph, dify_preview, render
from ragspine.workflow.view import PipelineView, pipeline_view

__all__ = ["DIFY_DSL_VERSION", "PipelineView", "check_dify_graph", "dify_preview", "pipeline_view", "render"]
