// Package docs holds the project's specification, specification.md, which
// the code, the README and the tests cite as "docs/specification.md
// section N". It has no code; its test keeps those citations pointing at
// sections that exist, keeps every file of the repository free of
// references to documents outside it, keeps layout.md naming every
// package of the tree, and keeps every package's imports one way along
// the data flow.
package docs
