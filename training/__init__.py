"""kselect.training: shapes, collection, datasets, training and evaluation of the cost model."""
