# The core's seeded random engine.

draw <- function(seed, n, what, bound = 0) kernlearn:::cpp_rng_draw(seed, n, what, bound)

test_that("the same seed gives the same draws and different seeds differ", {
  for (what in c("uniform", "normal", "permutation", "split")) {
    a <- draw(c(1L, 2L), 100, what)
    expect_identical(a, draw(c(1L, 2L), 100, what))
    expect_false(identical(a, draw(c(1L, 3L), 100, what)))
    expect_false(identical(a, draw(c(2L, 2L), 100, what)))
  }
  b1 <- draw(c(1L, 2L), 100, "below", 1000)
  expect_identical(b1, draw(c(1L, 2L), 100, "below", 1000))
  expect_false(identical(b1, draw(c(9L, 2L), 100, "below", 1000)))
  # A derived stream differs from its parent's.
  expect_false(isTRUE(all.equal(draw(c(1L, 2L), 50, "split"), draw(c(1L, 2L), 50, "uniform"))))
  # Seeds drawn with R's RNG follow set.seed().
  set.seed(42)
  s1 <- kernlearn:::.kl_seed()
  set.seed(42)
  s2 <- kernlearn:::.kl_seed()
  expect_identical(s1, s2)
  expect_length(s1, 2L)
  expect_identical(draw(s1, 10, "uniform"), draw(s2, 10, "uniform"))
})

test_that("uniform draws have the right range, moments and distribution", {
  u <- draw(c(123L, 456L), 1e5, "uniform")
  expect_true(all(u >= 0 & u < 1))
  expect_lt(abs(mean(u) - 0.5), 4 * sqrt(1 / 12 / 1e5))
  expect_lt(abs(var(u) - 1 / 12), 0.002)
  expect_gt(suppressWarnings(ks.test(u, "punif"))$p.value, 1e-3)
  # Not a shifted or squashed uniform: the test can fail.
  expect_lt(suppressWarnings(ks.test(u^1.1, "punif"))$p.value, 1e-3)
  uo <- draw(c(123L, 456L), 1e4, "uniform_open")
  expect_true(all(uo > 0 & uo < 1))
  # Successive draws are uncorrelated.
  expect_lt(abs(cor(u[-1], u[-length(u)])), 0.015)
})

test_that("normal draws have the right moments and distribution", {
  z <- draw(c(77L, 88L), 1e5, "normal")
  expect_lt(abs(mean(z)), 4 / sqrt(1e5))
  expect_lt(abs(var(z) - 1), 0.02)
  skew <- mean((z - mean(z))^3) / sd(z)^3
  kurt <- mean((z - mean(z))^4) / sd(z)^4
  expect_lt(abs(skew), 0.05)
  expect_lt(abs(kurt - 3), 0.1)
  expect_gt(suppressWarnings(ks.test(z, "pnorm"))$p.value, 1e-3)
  expect_lt(suppressWarnings(ks.test(z, "pnorm", sd = 1.05))$p.value, 1e-3)
})

test_that("below() stays in range and is roughly uniform", {
  k <- draw(c(5L, 6L), 7e4, "below", 7)
  expect_true(all(k == round(k)))
  expect_equal(range(k), c(0, 6))
  counts <- tabulate(k + 1, 7)
  expect_gt(chisq.test(counts)$p.value, 1e-3)
  expect_true(all(draw(c(5L, 6L), 100, "below", 1) == 0))
  big <- 2^40 + 3
  kb <- draw(c(5L, 6L), 1e4, "below", big)
  expect_true(all(kb >= 0 & kb < big & kb == round(kb)))
  expect_gt(max(kb), big / 2)
  expect_error(draw(c(5L, 6L), 10, "below", 0), "bound")
  expect_error(draw(c(5L, 6L), 10, "below", 2.5), "bound")
})

test_that("permutation() is a uniformly random permutation", {
  p <- draw(c(3L, 4L), 1000, "permutation")
  expect_type(p, "integer")
  expect_equal(sort(p), 0:999)
  expect_false(identical(p, 0:999))
  expect_identical(draw(c(3L, 4L), 0, "permutation"), integer(0))
  # Where element 0 lands, over many seeds, is uniform over 5 positions.
  pos <- vapply(seq_len(3000), function(i) which(draw(c(i, 17L), 5, "permutation") == 0L),
                integer(1))
  expect_gt(chisq.test(tabulate(pos, 5))$p.value, 1e-3)
})
