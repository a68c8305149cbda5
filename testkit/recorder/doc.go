// Package recorder keeps what a test fake has received, in arrival order, and
// lets a test wait for an entry it expects. The fakes of the model APIs
// (fakeanthropic, fakeopenai) record their requests with it; a waiter looks at
// what already arrived first and then wakes on every new entry, so it needs no
// polling and no sleep.
package recorder
