library(testthat)
library(kernlearn)

test_check("kernlearn")
