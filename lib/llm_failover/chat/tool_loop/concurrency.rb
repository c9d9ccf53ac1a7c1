# frozen_string_literal: true

module LlmFailover
  class Chat
    class ToolLoop
      # How the calls of one model turn run side by side (with_tools(concurrency:)):
      # a thread each, or a fiber each under a Fiber scheduler. Each call goes through
      # ToolLoop#perform; a tool's non-StandardError is raised in the loop's own thread
      # or fiber once every call has ended.
      # @api private
      module Concurrency
        private

        # Every call on a thread of its own; all have ended before the first
        # non-StandardError of a tool (which #perform lets through) goes on up from here.
        def run_in_threads(ready)
          threads = ready.map do |call, tool|
            Thread.new do
              Thread.current.report_on_exception = false # raised again in the loop's thread
              perform(call, tool)
            end
          end
          threads.each do |t|
            t.join
          rescue Exception # rubocop:disable Lint/RescueException -- waited for; raised below by #value
            nil
          end
          threads.each(&:value)
        end

        # Under a Fiber scheduler (Async), the calls run on fibers of the caller's thread
        # instead, so that a tool's waits go through the scheduler too.
        def run_in_fibers(ready)
          ended = Thread::Queue.new # scheduler-aware: pop lets the other fibers run
          ready.each do |call, tool|
            Fiber.schedule do
              perform(call, tool)
              ended << nil
            rescue Exception => e # rubocop:disable Lint/RescueException -- raised below, in the loop's fiber
              ended << e
            end
          end
          raised = ready.map { ended.pop }.compact
          raise raised.first unless raised.empty?
        end
      end
    end
  end
end
