"""Judges: classification metrics of guardrails and graders, agreement, rubric scores."""

from ._classification import AgreementResult
from ._classification import ClassificationResult
from ._classification import PRCurveResult
from ._classification import RecallThresholdResult
from ._classification import SmallSampleWarning
from ._classification import UndefinedMetricWarning
from ._classification import classification_metrics
from ._classification import cohen_kappa
from ._classification import fleiss_kappa
from ._classification import pr_curve
from ._classification import threshold_for_recall
from ._rubric import JudgeSetupError
from ._rubric import RubricResult
from ._rubric import check_same_judge
from ._rubric import compare_rubric_means
from ._rubric import rubric_summary

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
