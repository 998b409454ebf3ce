# Seeds for the core's random engine. The engine itself (reproducibility, ranges, moments and
# distributions of its draws) is checked by the core's C++ tests (tests/core, make test-core).

test_that("seeds drawn with R's RNG follow set.seed()", {
  set.seed(42)
  s1 <- kernlearn:::.kl_seed()
  set.seed(42)
  s2 <- kernlearn:::.kl_seed()
  expect_identical(s1, s2)
  expect_length(s1, 2L)
})
