"""The sandbox side: the confined process that runs a submission's code (`runner`, `kernel_agent`),
how it is started and walled in (`confinement`), and the limits on its time and memory.
"""
