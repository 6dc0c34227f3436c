"""Judges: classification metrics of guardrails and graders, agreement, rubric scores."""

from ._agreement import AgreementResult
from ._agreement import cohen_kappa
from ._agreement import fleiss_kappa
from ._confusion import ClassificationResult
from ._confusion import UndefinedMetricWarning
from ._confusion import classification_metrics
from ._curves import PRCurveResult
from ._curves import RecallThresholdResult
from ._curves import pr_curve
from ._curves import threshold_for_recall
from ._resample import SmallSampleWarning
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
