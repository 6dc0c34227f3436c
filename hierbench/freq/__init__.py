"""Frequentist estimators: the validating counterparts of the Bayesian models.

One private wing per job, each owning its ``__all__``:

- ``_rates``: success rates and their intervals, pass@k / pass^k, beta-binomial,
  confidence sequences, the scorecard;
- ``_resampling``: the task-level (cluster) bootstrap, paired tests, rankings;
- ``_variance``: G-theory variance components, the design language, REML,
  profile intervals, power and allocation;
- ``_glmm``: the crossed agent x task GLMM by maximum likelihood, models given by a
  formula (binomial, fractional, ordinal) and their reader's-scale answers;
- ``_horizon``: METR's time horizon and the doubling time of horizons;
- ``_irt``: item calibration and scoring without a sampler;
- ``_pairwise``: Bradley-Terry by maximum likelihood, Elo, win rates;
- ``_judges``: classification metrics, agreement, rubric scores;
- ``_profiles``: reliability over runs, quantiles, Pareto frontiers.

The numpy kernels the wings share (pass@k per cell, bootstrap weights, BCa)
live in ``_kernels``; input helpers in ``_inputs``.
"""

import warnings as _warnings

from ._glmm import (
    AgentVarianceResult,
    BoundaryEstimateWarning,
    CrossedMLResult,
    IgnoredClusterWarning,
    MarginalEffectsResult,
    MeanResponseResult,
    MixedMLResult,
    MLConvergenceWarning,
    SeparatedAgentWarning,
    agent_variance,
    average_marginal_effects,
    fit_crossed_ml,
    mean_response,
)
from ._horizon import (
    DoublingTimeResult,
    ExtremeHorizonWarning,
    TimeHorizonResult,
    doubling_time,
    metr_run_weights,
    time_horizon,
)
from ._irt import (
    IRTBank,
    IRTCalibrationResult,
    IRTConvergenceWarning,
    IRTScoreResult,
    calibrate_irt,
    irt_score,
)
from ._irt._ml import cell_loglik as cell_loglik  # for hierbench.design; not in __all__
from ._judges import (
    AgreementResult,
    ClassificationResult,
    JudgeSetupError,
    PRCurveResult,
    RecallThresholdResult,
    RubricResult,
    SmallSampleWarning,
    UndefinedMetricWarning,
    check_same_judge,
    classification_metrics,
    cohen_kappa,
    compare_rubric_means,
    fleiss_kappa,
    pr_curve,
    rubric_summary,
    threshold_for_recall,
)
from ._kernels import task_weights
from ._pairwise import (
    BradleyTerryMLResult,
    EloResult,
    NoFiniteMLEWarning,
    PositionConsistencyResult,
    WinRateResult,
    bradley_terry_ml,
    online_elo,
    position_consistency,
    win_rate,
)
from ._profiles import (
    ParetoResult,
    QuantileResult,
    ReliabilityResult,
    UnboundedQuantileWarning,
    mean_ci,
    order_statistic_interval,
    pareto_frontier,
    quantile_ci,
    reliability_profile,
)
from ._rates import (
    BetaBinomialResult,
    ConfidenceSequenceResult,
    EmptyConfidenceSequenceWarning,
    EmptySampleWarning,
    InsufficientRunsWarning,
    IntervalResult,
    NoOverdispersionWarning,
    PassKResult,
    SuccessRateResult,
    beta_binomial_mle,
    beta_binomial_profile_ci,
    clustered_se,
    confidence_sequence,
    design_effect,
    exact_interval,
    finite_population_se,
    pass_at_k,
    pass_hat_k,
    pooled_binomial_interval,
    proportion_interval,
    scorecard,
    stratified_mean,
    success_rate,
    wald_interval,
    wilson_interval,
)
from ._resampling import (
    BootstrapResult,
    DegenerateBootstrapError,
    DegenerateBootstrapWarning,
    MaxTApproximationWarning,
    PairedTestResult,
    PairwiseComparisonResult,
    PValueResolutionWarning,
    RankResult,
    UndefinedResampleWarning,
    UndefinedScoreWarning,
    UndefinedTestWarning,
    UnequalTaskSetsWarning,
    bootstrap_ci,
    compare_agents,
    holm,
    paired_test,
    rank_uncertainty,
)
from ._variance import (
    ConfoundedComponentWarning,
    DesignError,
    NegativeVarianceComponentWarning,
    NoIntervalWarning,
    RemlConvergenceWarning,
    UnbalancedDesignError,
    UndefinedCoefficientWarning,
    VarianceComponentsResult,
    minimum_detectable_effect,
    optimal_allocation,
    optimal_runs,
    paired_power,
    sample_size_normal,
    sd_paired_diff,
    tasks_for_power,
    variance_components,
)

#: names that moved: importing them from here still works, with a DeprecationWarning
_MOVED = {
    "bayes_d_study": "hierbench.metrics",
    "bayes_variance_components": "hierbench.metrics",
}


def __getattr__(name: str):
    if name in _MOVED:
        import importlib

        where = _MOVED[name]
        _warnings.warn(
            f"hierbench.freq.{name} moved to {where}.{name} (it summarises a Bayesian fit); "
            "the old name will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(where), name)
    raise AttributeError(f"module 'hierbench.freq' has no attribute {name!r}")


__all__ = [
    "AgentVarianceResult",
    "AgreementResult",
    "BetaBinomialResult",
    "BootstrapResult",
    "BoundaryEstimateWarning",
    "BradleyTerryMLResult",
    "ClassificationResult",
    "ConfidenceSequenceResult",
    "ConfoundedComponentWarning",
    "CrossedMLResult",
    "DegenerateBootstrapError",
    "DegenerateBootstrapWarning",
    "DesignError",
    "DoublingTimeResult",
    "EloResult",
    "EmptyConfidenceSequenceWarning",
    "EmptySampleWarning",
    "ExtremeHorizonWarning",
    "IRTBank",
    "IRTCalibrationResult",
    "IRTConvergenceWarning",
    "IRTScoreResult",
    "IgnoredClusterWarning",
    "InsufficientRunsWarning",
    "IntervalResult",
    "JudgeSetupError",
    "MLConvergenceWarning",
    "MarginalEffectsResult",
    "MaxTApproximationWarning",
    "MeanResponseResult",
    "MixedMLResult",
    "NegativeVarianceComponentWarning",
    "NoFiniteMLEWarning",
    "NoIntervalWarning",
    "NoOverdispersionWarning",
    "PRCurveResult",
    "PValueResolutionWarning",
    "PairedTestResult",
    "PairwiseComparisonResult",
    "ParetoResult",
    "PassKResult",
    "PositionConsistencyResult",
    "QuantileResult",
    "RankResult",
    "RecallThresholdResult",
    "ReliabilityResult",
    "RemlConvergenceWarning",
    "RubricResult",
    "SeparatedAgentWarning",
    "SmallSampleWarning",
    "SuccessRateResult",
    "TimeHorizonResult",
    "UnbalancedDesignError",
    "UnboundedQuantileWarning",
    "UndefinedCoefficientWarning",
    "UndefinedMetricWarning",
    "UndefinedResampleWarning",
    "UndefinedScoreWarning",
    "UndefinedTestWarning",
    "UnequalTaskSetsWarning",
    "VarianceComponentsResult",
    "WinRateResult",
    "agent_variance",
    "average_marginal_effects",
    "bayes_d_study",
    "bayes_variance_components",
    "beta_binomial_mle",
    "beta_binomial_profile_ci",
    "bootstrap_ci",
    "bradley_terry_ml",
    "calibrate_irt",
    "check_same_judge",
    "classification_metrics",
    "clustered_se",
    "cohen_kappa",
    "compare_agents",
    "compare_rubric_means",
    "confidence_sequence",
    "design_effect",
    "doubling_time",
    "exact_interval",
    "finite_population_se",
    "fit_crossed_ml",
    "fleiss_kappa",
    "holm",
    "irt_score",
    "mean_ci",
    "mean_response",
    "metr_run_weights",
    "minimum_detectable_effect",
    "online_elo",
    "optimal_allocation",
    "optimal_runs",
    "order_statistic_interval",
    "paired_power",
    "paired_test",
    "pareto_frontier",
    "pass_at_k",
    "pass_hat_k",
    "pooled_binomial_interval",
    "position_consistency",
    "pr_curve",
    "proportion_interval",
    "quantile_ci",
    "rank_uncertainty",
    "reliability_profile",
    "rubric_summary",
    "sample_size_normal",
    "scorecard",
    "sd_paired_diff",
    "stratified_mean",
    "success_rate",
    "task_weights",
    "tasks_for_power",
    "threshold_for_recall",
    "time_horizon",
    "variance_components",
    "wald_interval",
    "wilson_interval",
    "win_rate",
]
