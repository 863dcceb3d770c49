package rows

// PathID is pathID, for the external tests.
var PathID = pathID
