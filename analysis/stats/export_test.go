package stats

// The names this package's external tests use that only the package
// itself does otherwise.

var ClusterResamples = clusterResamples
var ClusterSE = clusterSE
var FisherExactLog = fisherExactLog
var PassHatK = passHatK
var PassHatKs = passHatKs
