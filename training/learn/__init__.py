"""Learning and judging the cost model: training, held-out evaluation, baselines, headroom, reports, cards."""
