# frozen_string_literal: true

require "rails/generators"
require "rails/generators/active_record"
require_relative "../create_once"
require_relative "../install/install_generator"

module LlmFailover
  module Generators
    # `bin/rails generate llm_failover:chat_ui` adds a minimal chat to an app that ran
    # llm_failover:install: a page per chat, a form, and ChatAnswerJob, which calls
    # chat.ask and re-renders the answer over Turbo Streams at every chunk. A reset
    # chunk empties the answer on the page before the backup's first words; Stop calls
    # chat.cancel!; the attempts of the last turn show under its answer (a migration
    # adds messages.request_id, which finds them in the attempt log after a reload).
    # The form takes files (images, PDFs): checked by chat.check_attachments before
    # the job is queued (a refused file is said on the form), asked with, shown under
    # their prompt and served by ChatsController#file from where Message keeps them.
    #
    # Turbo's JavaScript is the file turbo-rails ships, served from the gem by a
    # Rack::Files mount: no asset pipeline, Node or CDN. A file that exists is left
    # alone and the routes are added once, so running it again changes nothing.
    #
    # Loaded only by Rails' generator lookup; nothing in lib/llm_failover requires it.
    class ChatUiGenerator < ::Rails::Generators::Base
      include ::ActiveRecord::Generators::Migration
      include CreateOnce

      # Where the layout loads Turbo from (the route this generator adds).
      TURBO_PATH = "/chat_ui/turbo"
      ROUTES_MARK = "# llm_failover chat UI"
      MIGRATION = "add_request_id_to_messages"

      source_root File.expand_path("templates", __dir__)
      desc "Adds a chat page (Turbo Streams, reset on failover, Stop) over the Chat model of llm_failover:install."

      class_option :model, type: :string, default: "gpt-4o", desc: "Primary model of a new chat"
      class_option :provider, type: :string, default: "openai", desc: "Primary provider of a new chat"
      class_option :backup_model, type: :string, default: "claude-sonnet-4-6", desc: "Backup model of a new chat"
      class_option :backup_provider, type: :string, default: "anthropic", desc: "Backup provider of a new chat"

      # A refusal is an error: `bin/rails generate` exits non-zero and writes nothing.
      def self.exit_on_failure?
        true
      end

      def check_requirements
        missing = missing_requirements
        return if missing.empty?

        raise Thor::Error, "llm_failover:chat_ui needs what this app does not load yet; nothing was written.\n" \
                           "#{missing.map { |m| "  - #{m}" }.join("\n")}\nThen run the generator again."
      end

      def create_migration_file
        create_migration_once(MIGRATION)
      end

      def create_app_files
        create_once "chats_controller.rb", "app/controllers/chats_controller.rb"
        create_once "chat_answer_job.rb", "app/jobs/chat_answer_job.rb"
        create_once "chat_turn.rb", "app/models/chat_turn.rb"
        %w[index show _turn _form].each do |view|
          create_once "views/chats/#{view}.html.erb", "app/views/chats/#{view}.html.erb"
        end
        create_once "views/layouts/chats.html.erb", "app/views/layouts/chats.html.erb"
        create_once "cable.yml", "config/cable.yml"
      end

      def add_routes
        routes = File.join(destination_root, "config/routes.rb")
        if File.exist?(routes) && File.read(routes).include?(ROUTES_MARK)
          say_status :skip, "config/routes.rb (has the chat UI's routes)", :yellow
          return
        end

        route <<~RUBY
          #{ROUTES_MARK} (rails g llm_failover:chat_ui)
          resources :chats, only: %i[index show create] do
            member do
              post :ask
              post :stop
              post :decide
              get "files/:key/:index", action: :file, as: :file # a prompt's file
            end
          end
          # Turbo's JavaScript as turbo-rails ships it: no asset pipeline, Node or CDN.
          mount Rack::Files.new(Turbo::Engine.root.join("app/assets/javascripts").to_s), at: "#{TURBO_PATH}"
        RUBY
      end

      # Says where the prompts' files are kept: the chat UI hands them to chat.ask,
      # and the message model keeps them as llm_failover:install wrote it.
      def say_attachments
        model = File.join(destination_root, "app/models/message.rb")
        if File.exist?(model) && File.read(model).match?(InstallGenerator::ATTACHED)
          say_status :attachments, "kept by ActiveStorage (Message has_many_attached :attachments)", :blue
        else
          say_status :attachments, "kept in messages.attachments_data (Message has no has_many_attached " \
                                   ":attachments)", :blue
        end
      end

      private

      # What the app lacks, each said as what to add.
      def missing_requirements
        missing = []
        unless File.exist?(File.join(destination_root, "app/models/chat.rb"))
          missing << "the Chat model: run bin/rails generate llm_failover:install (and bin/rails db:migrate)"
        end
        unless defined?(::ActionController::Railtie)
          missing << 'ActionController: require "action_controller/railtie" in config/application.rb'
        end
        unless defined?(::ActionCable::Engine)
          missing << 'ActionCable: require "action_cable/engine" in config/application.rb ' \
                     '(an app that requires "rails/all" has it)'
        end
        unless defined?(::Turbo::Engine)
          missing << 'turbo-rails: gem "turbo-rails" in the Gemfile (and require "turbo-rails" in ' \
                     "config/application.rb if the app does not call Bundler.require)"
        end
        missing
      end

      def new_chat_attributes
        { model: options[:model], provider: options[:provider], backup_model: options[:backup_model],
          backup_provider: options[:backup_provider] }
      end

      def turbo_path
        TURBO_PATH
      end
    end
  end
end
