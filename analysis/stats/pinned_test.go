package stats_test

var pinned = []float64{}
