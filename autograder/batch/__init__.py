"""The batch side: grading a class of submissions (intake, repair, the grading stages, the gradebook),
sharding and merging, and the reports: the CSV, the class report, the feedback pages.
"""
