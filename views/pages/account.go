package pages

// AccountProps are the inputs of Account.
type AccountProps struct {
	Email     string
	Kinds     []NotifyKind
	MailOn    bool
	Saved     bool
	CSRFToken string
}

// NotifyKind is one kind of email a person may turn off.
type NotifyKind struct {
	Key, Label string
	On         bool
}
