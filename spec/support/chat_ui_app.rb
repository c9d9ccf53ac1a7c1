# frozen_string_literal: true

require "fileutils"
require "net/http"
require "open3"
require "socket"
require "tmpdir"

# The minimal Rails app of spec/fixtures/rails_app, copied to a temp dir and given the
# chat UI the way its developer would: llm_failover:install, db:migrate, then
# llm_failover:chat_ui (refused until config/application.rb loads ActionCable and
# turbo-rails), and served by `bin/rails server` (Puma) on a free loopback port.
# The app runs in its own process: its Rails application, database connection and
# LlmFailover configuration never mix with the spec process's.
class ChatUiApp
  FIXTURE = File.expand_path("../fixtures/rails_app", __dir__)
  GEMFILE = File.expand_path("../../Gemfile", __dir__)
  # What the generator's refusal asks for, added where it says.
  REQUIRES = %(require "action_cable/engine"\nrequire "turbo-rails"\n)
  BOOT_WAIT = 120 # seconds for the server to answer (6 helpers on 2 cores boot slowly)

  attr_reader :dir, :url, :env

  # @param fixture [String] the app copied
  # @param gemfile [String] the Gemfile its commands run with
  def initialize(fixture: FIXTURE, gemfile: GEMFILE)
    @dir = Dir.mktmpdir("llm_failover_chat_ui")
    FileUtils.cp_r(File.join(fixture, "."), @dir)
    FileUtils.mkdir_p(%w[storage log tmp db].map { |d| File.join(@dir, d) })
    @env = { "BUNDLE_GEMFILE" => gemfile, "RAILS_ENV" => "development", "DATABASE_URL" => nil,
             "OPENAI_API_KEY" => "sk-chat-ui-SECRET-1", "ANTHROPIC_API_KEY" => "sk-ant-chat-ui-SECRET-2" }
  end

  # Runs a command of the app (bin/rails ...) in its directory.
  # @param env [Hash] variables set (or, nil, unset) for this command only
  # @return [Array(String, Process::Status)] its output (stdout and stderr) and status
  def run(*command, env: {})
    Open3.capture2e(@env.merge(env), RbConfig.ruby, *command, chdir: @dir)
  end

  # Like #run, but raises with the output when the command fails.
  # @return [String] its output
  def rails!(*args)
    output, status = run("bin/rails", *args)
    raise "bin/rails #{args.join(' ')} failed:\n#{output}" unless status.success?

    output
  end

  # Does what the generator's refusal asks: config/application.rb loads ActionCable and
  # turbo-rails (this app does not call Bundler.require).
  def add_action_cable_and_turbo
    path = File.join(@dir, "config/application.rb")
    source = File.read(path)
    File.write(path, source.sub(%(require "llm_failover"\n)) { |line| REQUIRES + line })
  end

  # The generated initializer's providers, pointed at the spec's FakeProviders (an
  # initializer named to run after config/initializers/llm_failover.rb), files up
  # to 100 000 bytes each.
  def use_fake_providers(primary_url:, backup_url:)
    File.write(File.join(@dir, "config/initializers/llm_failover_fake_providers.rb"), <<~RUBY)
      LlmFailover.configure do |c|
        c.provider :openai, api: :openai, api_key: ENV.fetch("OPENAI_API_KEY"), base_url: #{primary_url.dump},
                            max_attachment_bytes: 100_000
        c.provider :anthropic, api: :anthropic, api_key: ENV.fetch("ANTHROPIC_API_KEY"), base_url: #{backup_url.dump},
                               max_attachment_bytes: 100_000
        c.max_retries = 0
      end
    RUBY
  end

  # Jobs run on one thread (ActiveJob's :async adapter, one worker): a second answer
  # waits in the queue while the first streams.
  def one_job_at_a_time
    File.write(File.join(@dir, "config/initializers/llm_failover_one_job_thread.rb"), <<~RUBY)
      ActiveSupport.on_load(:active_job) do
        self.queue_adapter = ActiveJob::QueueAdapters::AsyncAdapter.new(min_threads: 1, max_threads: 1)
      end
    RUBY
  end

  # What a developer does to let the assistant call tools: Tool classes, named in the
  # generated job's #tools. RefundOrder waits for a person's approval; each of its runs
  # is a line in tmp/refunds, which is how a spec counts them.
  def give_the_job_a_tool
    File.write(File.join(@dir, "app/models/order_status.rb"), <<~RUBY)
      class OrderStatus < LlmFailover::Tool
        description "Where an order is"
        param :order, type: :integer
        def execute(order:) = { order: order, status: "shipped" }
      end
    RUBY
    File.write(File.join(@dir, "app/models/refund_order.rb"), <<~RUBY)
      class RefundOrder < LlmFailover::Tool
        description "Refunds an order"
        param :order, type: :integer
        requires_approval!
        def execute(order:)
          File.open(Rails.root.join("tmp/refunds"), "a") { |f| f.puts(order) }
          "refunded order \#{order}"
        end
      end
    RUBY
    job = File.join(@dir, "app/jobs/chat_answer_job.rb")
    source = File.read(job)
    edited = source.sub(/  def tools\n    \[\]\n  end/, "  def tools\n    [OrderStatus, RefundOrder]\n  end")
    raise "the generated job has no `def tools [] end` to edit" if edited == source

    File.write(job, edited)
  end

  # @return [Array<String>] the orders RefundOrder refunded, one per run
  def refunds
    path = File.join(@dir, "tmp/refunds")
    File.exist?(path) ? File.readlines(path, chomp: true) : []
  end

  # Every file of the app but logs, tmp and the database, with its content and mtime.
  def files
    Dir.glob("**/*", base: @dir).sort.reject { |f| f.start_with?("log/", "tmp/", "storage/") }
       .select { |f| File.file?(File.join(@dir, f)) }
       .to_h { |f| [f, [File.read(File.join(@dir, f)), File.mtime(File.join(@dir, f))]] }
  end

  # Starts `bin/rails server` (Puma) on a free loopback port and waits until it answers.
  # @param up_path [String] a page that answers 2xx once the app is up
  # @return [String] its URL
  def start_server(up_path: "/chats")
    @up_path = up_path
    port = free_port
    @log = File.join(@dir, "log/server.out")
    @pid = Process.spawn(@env, RbConfig.ruby, "bin/rails", "server", "-b", "127.0.0.1", "-p", port.to_s,
                         chdir: @dir, out: @log, err: @log)
    @url = "http://127.0.0.1:#{port}"
    wait_until_up
    @url
  end

  # @return [Net::HTTPResponse]
  def get(path)
    Net::HTTP.get_response(URI.join(@url, path))
  end

  # Stops the server (TERM, then KILL after 10 s) and removes the app.
  def stop
    stop_server if @pid
  ensure
    FileUtils.remove_entry(@dir) if @dir && File.exist?(@dir)
  end

  def server_log
    @log && File.exist?(@log) ? File.read(@log) : ""
  end

  private

  def stop_server
    stop_process(@pid)
  ensure
    @pid = nil
  end

  # TERM, then KILL after 10 s; +group+ signals the process group +pid+ leads.
  def stop_process(pid, group: false)
    target = group ? -pid : pid
    Process.kill("TERM", target)
    deadline = monotonic + 10
    exited = nil
    sleep 0.05 until (exited = Process.wait(pid, Process::WNOHANG)) || monotonic > deadline
    unless exited
      Process.kill("KILL", target)
      Process.wait(pid)
    end
    Process.kill("KILL", target) if group # whatever of the group outlived its leader
  rescue Errno::ESRCH, Errno::ECHILD
    nil # already gone
  end

  def wait_until_up
    deadline = monotonic + BOOT_WAIT
    loop do
      raise "bin/rails server exited:\n#{server_log}" if Process.wait(@pid, Process::WNOHANG)

      begin
        return if get(@up_path).is_a?(Net::HTTPSuccess)
      rescue SystemCallError, Net::ReadTimeout, EOFError
        nil # not listening yet
      end
      raise "bin/rails server did not answer within #{BOOT_WAIT} s:\n#{server_log}" if monotonic > deadline

      sleep 0.2
    end
  end

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end

# Headless Chromium (Debian's `chromium`, installed by bin/setup) driven by cuprite.
module ChatUiBrowser
  # Flags a container needs: root has no sandbox; /dev/shm is small; no GPU; nothing
  # fetched from the network.
  FLAGS = %w[no-sandbox disable-gpu disable-dev-shm-usage disable-background-networking].freeze

  class << self
    # @return [String, nil] the chromium executable
    def path
      return @path if defined?(@path)

      candidates = [ENV["LLM_FAILOVER_CHROMIUM"], "chromium", "chromium-browser"].compact
      @path = candidates.lazy.map { |c| c.include?("/") ? c : which(c) }.find { |p| p && File.executable?(p) }
    end

    # Why the browser specs are skipped (nil when they are not).
    def missing_reason
      return nil if path

      "chromium not found (Debian's chromium, or LLM_FAILOVER_CHROMIUM): run bin/setup " \
        "(apt-get install chromium); the chat UI's browser specs are SKIPPED"
    end

    # Records, on a chat's page, every text its last turn's answer showed (a
    # MutationObserver sees each update Turbo applies, however briefly it stayed).
    def record_answers(page)
      page.execute_script(<<~JS)
        window.answers = []
        new MutationObserver(() => {
          const turn = document.querySelector("#turns .turn:last-child")
          if (turn) window.answers.push([turn.className, turn.querySelector(".answer").textContent])
        }).observe(document.getElementById("turns"), { childList: true, subtree: true, characterData: true })
      JS
    end

    # @return [Array<String>] the answers #record_answers saw, in order
    def shown_answers(page)
      page.evaluate_script("window.answers").map(&:last)
    end

    # A Capybara session in a new headless Chromium, pointed at +url+.
    # @return [Capybara::Session]
    def session(url)
      require "capybara"
      require "capybara/cuprite"
      Capybara.register_driver(:llm_failover_cuprite) do |app|
        Capybara::Cuprite::Driver.new(app, browser_path: path, headless: true, window_size: [900, 480],
                                           timeout: 60, process_timeout: 60,
                                           browser_options: FLAGS.to_h { |f| [f, nil] })
      end
      Capybara.run_server = false
      Capybara.app_host = url
      Capybara::Session.new(:llm_failover_cuprite)
    end

    private

    def which(name)
      ENV.fetch("PATH", "").split(File::PATH_SEPARATOR).map { |d| File.join(d, name) }.find { |p| File.executable?(p) }
    end
  end
end
