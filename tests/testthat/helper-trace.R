# Counts the calls of the package's internal function `name` from now on: returns an
# environment whose `n` is the count. Stop counting with untrace_count(name).
trace_count <- function(name) {
  counter <- new.env()
  counter$n <- 0L
  suppressMessages(trace(name, where = asNamespace("kernlearn"), print = FALSE,
                         tracer = bquote(assign("n", .(counter)$n + 1L, envir = .(counter)))))
  counter
}
untrace_count <- function(name)
  suppressMessages(untrace(name, where = asNamespace("kernlearn")))
