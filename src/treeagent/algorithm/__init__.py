"""The paper's method (Section 3, Appendix A): the tree model, preprocessing, the budget search, Algorithm 1 and Flat sectioning, residual links and span retrieval."""
