package rows

// PathID is pathID, for the external tests.
var PathID = pathID

// Tracked returns how many series the converter keeps state for.
func (c *Converter) Tracked() int { return len(c.series) }
