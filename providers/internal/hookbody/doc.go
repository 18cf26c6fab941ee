// Package hookbody holds the projections of the webhook bodies that more
// than one forge sends in the same shape, and the mapping their
// normalizers share: the common fields, a pull request, an issue, labels,
// a push. The forges' packages that receive such bodies import it (each
// one's doc says so); nothing outside providers can.
package hookbody
