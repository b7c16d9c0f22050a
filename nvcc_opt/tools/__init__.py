"""The tools a model calls: typed functions whose schemas, prompt text and validation come from
their declarations, with capped output and errors returned as observations.
`catalog.open_catalog` builds them for a project (and a region).

Nothing is imported here: a pure parser such as `ptxas` is imported without the catalog, the
build trees and the project configuration behind it."""
