package gen

var Failed = Result{IsError: true}
