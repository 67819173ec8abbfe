package decider

// One constructor per Code: each names the numbers its reason speaks of,
// in the order Values returns them.

// noDataReason builds the NoData reason (its constant says when).
func noDataReason() Reason { return Reason{Code: NoData} }

// metricRefusedReason builds the MetricRefused reason (its constant says when).
func metricRefusedReason(seconds, bound float64) Reason {
	return Reason{Code: MetricRefused, values: [3]float64{seconds, bound}}
}

// stableTargetReason builds the StableTarget reason (its constant says when).
func stableTargetReason(average, target, pods float64) Reason {
	return Reason{Code: StableTarget, values: [3]float64{average, target, pods}}
}

// panicTargetReason builds the PanicTarget reason (its constant says when).
func panicTargetReason(average, target, pods float64) Reason {
	return Reason{Code: PanicTarget, values: [3]float64{average, target, pods}}
}

// scaleUpRateLimitedReason builds the ScaleUpRateLimited reason (its constant says when).
func scaleUpRateLimitedReason(wanted, allowed, ready float64) Reason {
	return Reason{Code: ScaleUpRateLimited, values: [3]float64{wanted, allowed, ready}}
}

// scaleDownRateLimitedReason builds the ScaleDownRateLimited reason (its constant says when).
func scaleDownRateLimitedReason(wanted, allowed, ready float64) Reason {
	return Reason{Code: ScaleDownRateLimited, values: [3]float64{wanted, allowed, ready}}
}

// activationScaleReason builds the ActivationScale reason (its constant says when).
func activationScaleReason(wanted, activationScale float64) Reason {
	return Reason{Code: ActivationScale, values: [3]float64{wanted, activationScale}}
}

// panicEnteredReason builds the PanicEntered reason (its constant says when).
func panicEnteredReason(panicPods, ready, threshold float64) Reason {
	return Reason{Code: PanicEntered, values: [3]float64{panicPods, ready, threshold}}
}

// panicExitedReason builds the PanicExited reason (its constant says when).
func panicExitedReason(stableWindowSeconds float64) Reason {
	return Reason{Code: PanicExited, values: [3]float64{stableWindowSeconds}}
}

// panicHoldReason builds the PanicHold reason (its constant says when).
func panicHoldReason(wanted, held float64) Reason {
	return Reason{Code: PanicHold, values: [3]float64{wanted, held}}
}

// scaleDownDelayedReason builds the ScaleDownDelayed reason (its constant says when).
func scaleDownDelayedReason(wanted, held, delaySeconds float64) Reason {
	return Reason{Code: ScaleDownDelayed, values: [3]float64{wanted, held, delaySeconds}}
}

// noMetricsYetReason builds the NoMetricsYet reason (its constant says when).
func noMetricsYetReason() Reason { return Reason{Code: NoMetricsYet} }

// minScaleReason builds the MinScale reason (its constant says when).
func minScaleReason(wanted, minScale float64) Reason {
	return Reason{Code: MinScale, values: [3]float64{wanted, minScale}}
}

// initialScaleReason builds the InitialScale reason (its constant says when).
func initialScaleReason(wanted, initialScale float64) Reason {
	return Reason{Code: InitialScale, values: [3]float64{wanted, initialScale}}
}

// maxScaleReason builds the MaxScale reason (its constant says when).
func maxScaleReason(wanted, maxScale float64) Reason {
	return Reason{Code: MaxScale, values: [3]float64{wanted, maxScale}}
}

// scaleToZeroDisabledReason builds the ScaleToZeroDisabled reason (its constant says when).
func scaleToZeroDisabledReason() Reason { return Reason{Code: ScaleToZeroDisabled} }

// awaitingActivationReason builds the AwaitingActivation reason (its constant says when).
func awaitingActivationReason(secondsLeft float64) Reason {
	return Reason{Code: AwaitingActivation, values: [3]float64{secondsLeft}}
}

// activationTimeoutReason builds the ActivationTimeout reason (its constant says when).
func activationTimeoutReason(timeoutSeconds float64) Reason {
	return Reason{Code: ActivationTimeout, values: [3]float64{timeoutSeconds}}
}

// stableWindowHoldReason builds the StableWindowHold reason (its constant says when).
func stableWindowHoldReason(secondsLeft float64) Reason {
	return Reason{Code: StableWindowHold, values: [3]float64{secondsLeft}}
}

// deactivatedReason builds the Deactivated reason (its constant says when).
func deactivatedReason(stableWindowSeconds float64) Reason {
	return Reason{Code: Deactivated, values: [3]float64{stableWindowSeconds}}
}

// podRetentionReason builds the PodRetention reason (its constant says when).
func podRetentionReason(secondsLeft float64) Reason {
	return Reason{Code: PodRetention, values: [3]float64{secondsLeft}}
}

// gracePeriodReason builds the GracePeriod reason (its constant says when).
func gracePeriodReason(inPathSeconds, graceSeconds float64) Reason {
	return Reason{Code: GracePeriod, values: [3]float64{inPathSeconds, graceSeconds}}
}

// scaledToZeroReason builds the ScaledToZero reason (its constant says when).
func scaledToZeroReason(inactiveSeconds, inPathSeconds float64) Reason {
	return Reason{Code: ScaledToZero, values: [3]float64{inactiveSeconds, inPathSeconds}}
}

// learnedFallbackReason builds the LearnedFallback reason (its constant says when).
func learnedFallbackReason(gapsSeen, gapsNeeded float64, detail string) Reason {
	return Reason{Code: LearnedFallback, values: [3]float64{gapsSeen, gapsNeeded}, Detail: detail}
}

// preWarmReason builds the PreWarm reason (its constant says when).
func preWarmReason(secondsUntil, gapsEndedThere, gapsThatLong float64, detail string) Reason {
	return Reason{Code: PreWarm, values: [3]float64{secondsUntil, gapsEndedThere, gapsThatLong}, Detail: detail}
}

// keepAliveReason builds the KeepAlive reason (its constant says when).
func keepAliveReason(secondsUntil, gapsEndedThere, gapsThatLong float64, detail string) Reason {
	return Reason{Code: KeepAlive, values: [3]float64{secondsUntil, gapsEndedThere, gapsThatLong}, Detail: detail}
}

// learnedReleaseReason builds the LearnedRelease reason (its constant says when).
func learnedReleaseReason(secondsUntil, gapsThatLong, allGaps float64, detail string) Reason {
	return Reason{Code: LearnedRelease, values: [3]float64{secondsUntil, gapsThatLong, allGaps}, Detail: detail}
}

// activatorNoReadyPodsReason builds the ActivatorNoReadyPods reason (its constant says when).
func activatorNoReadyPodsReason() Reason { return Reason{Code: ActivatorNoReadyPods} }

// activatorScaleUnknownReason builds the ActivatorScaleUnknown reason (its constant says when).
func activatorScaleUnknownReason(want float64) Reason {
	return Reason{Code: ActivatorScaleUnknown, values: [3]float64{want}}
}

// activatorBurstCapacityReason builds the ActivatorBurstCapacity reason (its constant says when).
func activatorBurstCapacityReason(excessBurstCapacity, targetBurstCapacity float64) Reason {
	return Reason{Code: ActivatorBurstCapacity, values: [3]float64{excessBurstCapacity, targetBurstCapacity}}
}

// activatorOutOfPathReason builds the ActivatorOutOfPath reason (its constant says when).
func activatorOutOfPathReason(excessBurstCapacity float64) Reason {
	return Reason{Code: ActivatorOutOfPath, values: [3]float64{excessBurstCapacity}}
}

// stateChangedReason builds the StateChanged reason (its constant says when).
func stateChangedReason(state State, detail string) Reason {
	return Reason{Code: StateChanged, values: [3]float64{float64(state)}, Detail: detail}
}

// scaleUpStabilizedReason builds the ScaleUpStabilized reason (its constant says when).
func scaleUpStabilizedReason(wanted, held, windowSeconds float64) Reason {
	return Reason{Code: ScaleUpStabilized, values: [3]float64{wanted, held, windowSeconds}}
}

// scaleDownStabilizedReason builds the ScaleDownStabilized reason (its constant says when).
func scaleDownStabilizedReason(wanted, held, windowSeconds float64, detail string) Reason {
	return Reason{Code: ScaleDownStabilized, values: [3]float64{wanted, held, windowSeconds}, Detail: detail}
}

// scaleUpLimitReason builds the ScaleUpLimit reason (its constant says when).
func scaleUpLimitReason(wanted, allowed, current float64, detail string) Reason {
	return Reason{Code: ScaleUpLimit, values: [3]float64{wanted, allowed, current}, Detail: detail}
}

// scaleDownLimitReason builds the ScaleDownLimit reason (its constant says when).
func scaleDownLimitReason(wanted, allowed, current float64, detail string) Reason {
	return Reason{Code: ScaleDownLimit, values: [3]float64{wanted, allowed, current}, Detail: detail}
}

// tooManyReplicasReason builds the TooManyReplicas reason (its constant says when).
func tooManyReplicasReason(wanted, maxReplicas float64, detail string) Reason {
	return Reason{Code: TooManyReplicas, values: [3]float64{wanted, maxReplicas}, Detail: detail}
}

// tooFewReplicasReason builds the TooFewReplicas reason (its constant says when).
func tooFewReplicasReason(wanted, minReplicas float64, detail string) Reason {
	return Reason{Code: TooFewReplicas, values: [3]float64{wanted, minReplicas}, Detail: detail}
}

// metricReplicasReason builds the MetricReplicas reason (its constant says when).
func metricReplicasReason(usage, target, replicas float64, detail string) Reason {
	return Reason{Code: MetricReplicas, values: [3]float64{usage, target, replicas}, Detail: detail}
}

// withinToleranceReason builds the WithinTolerance reason (its constant says when).
func withinToleranceReason(ratio, low, high float64, detail string) Reason {
	return Reason{Code: WithinTolerance, values: [3]float64{ratio, low, high}, Detail: detail}
}

// podsRebalancedReason builds the PodsRebalanced reason (its constant says when).
func podsRebalancedReason(missing, unready, newRatio float64, detail string) Reason {
	return Reason{Code: PodsRebalanced, values: [3]float64{missing, unready, newRatio}, Detail: detail}
}

// directionFlipReason builds the DirectionFlip reason (its constant says when).
func directionFlipReason(ratio, newRatio float64, detail string) Reason {
	return Reason{Code: DirectionFlip, values: [3]float64{ratio, newRatio}, Detail: detail}
}

// failedGetPodsMetricReason builds the FailedGetPodsMetric reason (its constant says when).
func failedGetPodsMetricReason(kind float64, detail string) Reason {
	return Reason{Code: FailedGetPodsMetric, values: [3]float64{kind}, Detail: detail}
}

// failedGetResourceMetricReason builds the FailedGetResourceMetric reason (its constant says when).
func failedGetResourceMetricReason(kind float64, detail string) Reason {
	return Reason{Code: FailedGetResourceMetric, values: [3]float64{kind}, Detail: detail}
}

// scaleDownBlockedReason builds the ScaleDownBlocked reason (its constant says when).
func scaleDownBlockedReason(proposal, current float64) Reason {
	return Reason{Code: ScaleDownBlocked, values: [3]float64{proposal, current}}
}

// metricsUnavailableReason builds the MetricsUnavailable reason (its constant says when).
func metricsUnavailableReason(current float64) Reason {
	return Reason{Code: MetricsUnavailable, values: [3]float64{current}}
}

// activatorNotNeededReason builds the ActivatorNotNeeded reason (its constant says when).
func activatorNotNeededReason() Reason { return Reason{Code: ActivatorNotNeeded} }

// parkedReason builds the Parked reason (its constant says when).
func parkedReason(secondsParked, secondsLeft float64) Reason {
	return Reason{Code: Parked, values: [3]float64{secondsParked, secondsLeft}}
}

// parkExpiredReason builds the ParkExpired reason (its constant says when).
func parkExpiredReason(secondsParked, maxParkedSeconds float64) Reason {
	return Reason{Code: ParkExpired, values: [3]float64{secondsParked, maxParkedSeconds}}
}

// parkExpiredAwakeReason builds the ParkExpired reason of a replica that a
// rule keeps awake after the park (its constant says when).
func parkExpiredAwakeReason(secondsParked, maxParkedSeconds float64) Reason {
	return Reason{Code: ParkExpired, values: [3]float64{secondsParked, maxParkedSeconds, 1}}
}

// unparkedReason builds the Unparked reason (its constant says when).
func unparkedReason(secondsParked float64) Reason {
	return Reason{Code: Unparked, values: [3]float64{secondsParked}}
}

// parkDeclinedReason builds the ParkDeclined reason (its constant says when).
func parkDeclinedReason(secondsUntil, parkedCost, coldStartSeconds float64) Reason {
	return Reason{Code: ParkDeclined, values: [3]float64{secondsUntil, parkedCost, coldStartSeconds}}
}

// parkRefusedReason builds the ParkRefused reason (its constant says when).
func parkRefusedReason() Reason { return Reason{Code: ParkRefused} }

// activatorParkedReason builds the ActivatorParked reason (its constant says when).
func activatorParkedReason() Reason { return Reason{Code: ActivatorParked} }
