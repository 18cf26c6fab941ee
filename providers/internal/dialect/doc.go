// Package dialect says how a forge whose REST API is modeled on another
// forge's differs from it, for the client of that API to speak both: the
// forge whose API it is modeled on leaves Dialect nil, a forge that
// answers the same calls with differences gives its Dialect (from its own
// package, providers/<forge>), and the composition root hands it to the
// client. The client names no such forge: it asks the Dialect.
package dialect
