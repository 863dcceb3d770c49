package service

// CapStatus is capStatus, for the external tests.
var CapStatus = capStatus
