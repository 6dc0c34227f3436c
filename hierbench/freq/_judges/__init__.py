"""Judges: classification metrics of guardrails and graders, agreement, rubric scores."""

from ._classification import (
    AgreementResult,
    ClassificationResult,
    PRCurveResult,
    RecallThresholdResult,
    SmallSampleWarning,
    UndefinedMetricWarning,
    classification_metrics,
    cohen_kappa,
    fleiss_kappa,
    pr_curve,
    threshold_for_recall,
)
from ._rubric import (
    JudgeSetupError,
    RubricResult,
    check_same_judge,
    compare_rubric_means,
    rubric_summary,
)

__all__ = [
    "AgreementResult",
    "ClassificationResult",
    "JudgeSetupError",
    "PRCurveResult",
    "RecallThresholdResult",
    "RubricResult",
    "SmallSampleWarning",
    "UndefinedMetricWarning",
    "check_same_judge",
    "classification_metrics",
    "cohen_kappa",
    "compare_rubric_means",
    "fleiss_kappa",
    "pr_curve",
    "rubric_summary",
    "threshold_for_recall",
]
