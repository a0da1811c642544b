package failclosed

// Find is find, for the tests of package failclosed_test.
var Find = find
