# frozen_string_literal: true

require "llm_failover/llm_failover" # Engine::Cancel
require_relative "../records/warnings"

module LlmFailover
  # Stops one running call from another thread (Chat#cancel!) or another process
  # (a chat record's cancel_requested_at column, polled by the process's
  # ActiveRecord::CancelWatcher).
  #
  # How it stops the engine: #cancel! sets a flag and wakes the calling thread
  # (Thread#wakeup). Waiting in the engine, the thread is woken through the engine's
  # unblocking function (it interrupts even a provider that sends nothing); the
  # engine then asks its listener (Call#on_interrupt), which raises Signal (an
  # Engine::Cancel): the engine cuts the transfer and returns a cancelled
  # Engine::Result, with the text delivered so far. Running Ruby code inside the call
  # (the store, the sinks, the user's block), the thread is never cut: the listener
  # reads the flag when that code returns to the engine.
  # Nothing is raised into the thread from outside, so no interrupt mask
  # (Thread.handle_interrupt) is needed around the store, the sinks or the block.
  #
  # Under a Fiber scheduler the thread runs other fibers too, so it is not woken.
  # The call's wake_io (a pipe's read end) is watched by the engine beside the
  # transfer instead: #cancel! writes a byte, the wait ends (a silent provider's, or
  # a sleep before a retry), and the engine's on_wake raises the Signal in the
  # calling fiber.
  #
  # @api private: Chat builds one per call
  class Cancellation
    # Raised inside the call (from the engine's listener), where the engine takes it
    # as its cancel; before the call starts, rescued in #run. Never seen by the
    # caller. An Exception (Engine::Cancel is one), not a StandardError, so that a
    # `rescue => e` in a store or a block cannot swallow it.
    class Signal < Engine::Cancel; end

    # @param check [#call, #watch, nil] how a cancel from another process reaches the
    #   call. A callable is polled every +interval+ seconds on a thread of this call
    #   (truthy cancels it). An object with #watch(cancellation, interval:) arranges for
    #   cancellation.cancel! itself and returns what #stop ends, or nil (a chat record's
    #   CancelRequest: one watcher thread per process for every such call).
    # @param logger [#warn, nil] where a raising check is reported (the chat's)
    def initialize(check: nil, interval: 0.2, logger: nil)
      @check = check
      @interval = interval
      @logger = logger
      @lock = Mutex.new
      @requested = false
      @thread = nil
      @pipe = nil # [reader, writer] while a call under a scheduler runs
    end

    # Stops the call (at once when it is running, at its start otherwise).
    # @return [self]
    def cancel!
      @lock.synchronize do
        @requested = true
        # Under the GVL an attached thread is alive (killed, it detaches in #run's ensure).
        if @thread
          @thread.wakeup if @thread.alive?
        elsif @pipe
          @pipe.last.write_nonblock(".", exception: false) # ends the engine's wait (wake_io)
        end
      end
      self
    end

    # Whether #cancel! was called.
    def cancelled?
      @requested
    end

    # Runs the block (the call's Engine#run) so that #cancel! stops it.
    # @return [Object, nil] the block's value; nil when the call was cancelled before
    #   the block ran
    def run
      watch = nil
      begin
        # Before attach: a cancel the watch finds at once only sets the flag.
        watch = start_watch if @check
        attach
        raise_if_requested
        yield
      rescue Signal
        nil
      ensure
        detach
        watch&.stop
      end
    end

    # @api private: a listener callback found the call cancelled
    def raise_if_requested
      raise Signal if @requested
    end

    # @api private: what the engine watches under a scheduler (nil in a thread)
    # @return [IO, nil]
    def wake_io
      @pipe&.first
    end

    # @api private: wake_io became readable
    def woken
      raise_if_requested
      @lock.synchronize { @pipe&.first&.read_nonblock(64, exception: false) } # not from cancel!: drained
      nil
    end

    # Watches the cancel check, when there is one, while the block runs, without a call
    # attached: a tool loop reads #cancelled? between its turns (a tool may run for
    # minutes, and a Stop pressed meanwhile must not send another turn).
    # @return [Object] the block's value
    def watching
      watch = start_watch if @check
      yield
    ensure
      watch&.stop
    end

    # Whether #cancel! was called, or a callable check says so now (asked at once,
    # not at the watch's next poll).
    # @return [Boolean]
    def requested_now?
      return true if @requested
      return false unless @check.respond_to?(:call)

      cancel! if @check.call
      @requested
    rescue StandardError
      false # the watch reports a raising check; the call goes on, as it does there
    end

    private

    def attach
      @lock.synchronize do
        # The engine waits through the scheduler only in a non-blocking fiber (a blocking
        # fiber under a scheduler waits like a thread).
        if Fiber.scheduler && !Fiber.current.blocking?
          @pipe = IO.pipe
        else
          @thread = Thread.current
        end
      end
    end

    def detach
      @lock.synchronize do
        @thread = nil
        @pipe&.each(&:close)
        @pipe = nil
      end
    end

    def start_watch
      return @check.watch(self, interval: @interval) if @check.respond_to?(:watch)

      Poller.new(@check, self, @interval, @logger)
    end

    # A callable check's thread: polls it until the call ends. It is stopped by a flag,
    # never killed: a thread killed inside a query would hand a broken connection back
    # to its pool.
    class Poller
      def initialize(check, cancellation, interval, logger)
        @check = check
        @logger = logger
        @cancellation = cancellation
        @interval = interval
        @lock = Mutex.new
        @wake = ConditionVariable.new
        @finished = false
        @thread = Thread.new do
          Thread.current.name = "llm_failover cancel check"
          Thread.current.report_on_exception = false
          while watching?
            cancellation.cancel! if poll
          end
        end
      end

      # Ends the polling (the call ended) and waits for the thread.
      def stop
        @lock.synchronize do
          @finished = true
          @wake.signal
        end
        @thread.join
      end

      private

      # Waits one interval; false once the call ended or was cancelled.
      def watching?
        @lock.synchronize do
          @wake.wait(@lock, @interval) unless @finished || @cancellation.cancelled?
          !(@finished || @cancellation.cancelled?)
        end
      end

      def poll
        @check.call
      rescue StandardError => e
        unless @warned
          @warned = true
          Warnings.warn("the cancel check raised #{e.class}: #{e.message} (the call goes on)", logger: @logger)
        end
        false
      end
    end
    private_constant :Poller
  end
end
